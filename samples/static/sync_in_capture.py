"""torchair#236: a stream sync inside aclgraph capture ("Not allow to sync captured-stream").

An MoE router reads expert counts back to the host (.item(), .tolist()) and picks tokens
with a boolean mask, all between capture_begin() and capture_end().
"""
# expect-check: GL202@18 GL202@19 GL202@21 GL202@21 GL202@30
# expect-region: GL202@18 capture sync_in_capture.py:28 capture_router>route
# expect-region: GL202@19 capture sync_in_capture.py:28 capture_router>route
# expect-region: GL202@21 capture sync_in_capture.py:28 capture_router>route
# expect-region: GL202@21 capture sync_in_capture.py:28 capture_router>route
# expect-region: GL202@30 capture sync_in_capture.py:28 capture_router

import torch


def route(logits, top_k: int):
    weights, experts = logits.topk(top_k, dim=-1)
    counts = torch.bincount(experts.flatten(), minlength=logits.shape[-1])
    busiest = counts.argmax().item()
    keep = weights > 0.1
    return weights[keep], counts.tolist(), busiest


def capture_router(static_logits):
    graph = torch.npu.NPUGraph()
    stream = torch.npu.Stream()
    with torch.npu.stream(stream):
        graph.capture_begin()
        out = route(static_logits, 2)
        torch.npu.synchronize()
        graph.capture_end()
    hosts = route(static_logits, 2)  # outside capture: fine
    return graph, out, hosts
