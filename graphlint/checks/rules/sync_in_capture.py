from __future__ import annotations

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.rules._capture import CaptureRule
from graphlint.checks.rules.base import SiteContext, snippet
from graphlint.checks.syntax import positional


class SyncInCapture(CaptureRule):
    """## What it does
    Flags operations that wait for the device or whose output shape depends on tensor values,
    inside a capture region: `.item()`, `.tolist()`, `synchronize()`, `nonzero()`,
    one-argument `torch.where(cond)`, `masked_select`, `unique`, `bincount`, and boolean-mask
    indexing `x[x > 0]` / `x[mask]`. Reading back a host tensor waits for nothing, and is not
    flagged: one made on the host (`device="cpu"`, `.cpu()`, a `_cpu` name), or host work alone
    on Python values (`torch.quantile(torch.tensor(times), q=0.5).item()`).

    ## Why is this bad?
    A captured graph replays fixed kernels with fixed shapes and may not synchronise the stream.
    These operations copy a value to the host (a stream sync: "Not allow to sync
    captured-stream") or size their output from data the capture cannot know. In a plain
    compiled region they are graph breaks (layer: capture).

    ## Example
    ```python
    valid = scores[scores > threshold]
    ```

    `.item()` / `.tolist()` of a tensor known to be on the host (made with `device="cpu"`, or
    named `*_cpu` as serving code names its host copies; also when it was made so in another
    function and reached here only through arguments, returns or attributes, as the value flow
    shows) waits for nothing and is not flagged.
    Assigning a scalar through a mask (`x[mask] = -1`, `x[x > 0] = float("-inf")`, an `int`
    parameter) is
    `masked_fill`: no sync, and the shape stays static, so it is not flagged; reading through a
    mask, or assigning a tensor through one, is.

    ## Use instead
    Keep shapes static: `torch.where(scores > threshold, scores, 0)`, or masks multiplied in;
    read values back only after replay.

    ## Fix safety
    No automatic fix.

    ## References
    torchair#236
    """

    code = "GL202"
    slug = "sync-in-capture"
    summary = ".item()/.tolist()/synchronize()/nonzero/mask indexing in a capture region"
    message = "device sync or data-dependent shape inside graph capture"
    refs = ("torchair#236",)
    predicts = ("GB0124", "GB0109", "GB0033", "GB0036", "GB0037")

    def visit_Call(self, node: cst.Call, ctx: SiteContext) -> None:
        func = node.func
        name = ctx.qualify(func)
        if name in apis.SYNC_FUNCTIONS:
            ctx.report(self, node)
        elif name == apis.ONE_ARGUMENT_WHERE:
            if len(positional(node)) == 1 and len(node.args) == 1:
                ctx.report(self, node, "one-argument torch.where(cond) is nonzero(): a data-dependent shape inside graph capture")
        elif isinstance(func, cst.Attribute) and func.attr.value in apis.SYNC_METHODS:
            if func.attr.value in apis.READBACK_METHODS and (
                ctx.known_device(func.value) == apis.HOST_DEVICE or ctx.host_side(node)
            ):
                return  # a host tensor's values are read without waiting for the device
            if name is None or not name.startswith(("torch.", "torch_npu.")) or func.attr.value == "synchronize":
                ctx.report(
                    self, node, f".{func.attr.value}() inside graph capture: device sync or data-dependent shape",
                    host_receiver=func.attr.value in apis.READBACK_METHODS,
                )

    def visit_Subscript(self, node: cst.Subscript, ctx: SiteContext) -> None:
        stored = ctx.assigned_value(node)
        if stored is not None and _is_scalar(stored, ctx):
            return  # ``x[mask] = -1`` is masked_fill: no sync, the shape stays static
        if stored is not None and (ctx.made_by(node.value) or "").startswith("numpy."):
            return  # a store into a numpy array: host memory under capture, traced without a break by dynamo
        for element in node.slice:
            if isinstance(element.slice, cst.Index) and ctx.is_mask(element.slice.value):
                ctx.report(self, node, "boolean-mask indexing inside graph capture: the output shape depends on the data")
                return

    VALID = [
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x, times: list[float]):
                median = torch.quantile(torch.tensor(times), q=0.5).item()
                return x * 2, median
        """),
        snippet("""
            import numpy as np
            import torch

            @torch.compile(mode="reduce-overhead")
            def spec_augment(x, idxs, shape):
                batch, length = shape
                spans = np.array(idxs)
                spans[spans > length - 1] = length - 1
                return x * len(spans)
        """),
        snippet("""
            import torch

            def postprocess(scores):
                return scores[scores > 0.5].tolist()
        """),
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x, mask):
                return torch.where(mask > 0, x, torch.zeros_like(x))
        """),
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x):
                return x[:, :4] * x.size(0)
        """),
        snippet("""
            import math
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(logits, token_ids):
                mask = token_ids == 0
                logits[mask] = -1
                logits[token_ids < 0] = float("-inf")
                logits[~mask] = -math.inf
                logits[mask & (token_ids > 3)] = torch.finfo(logits.dtype).min
                return logits
        """),
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(topk_ids, num_token_non_padded, fill_value: int, forward_batch):
                indices = torch.arange(topk_ids.shape[0], device=topk_ids.device)
                topk_ids[indices >= num_token_non_padded, :] = fill_value
                lens = forward_batch.seq_lens_cpu.tolist()
                host = torch.tensor([1, 2], device="cpu")
                return topk_ids, lens, host.item()
        """),
    ]
    INVALID = [
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x):
                n = x.sum().item()  # error
                return x * n
        """),
        snippet("""
            import torch

            def select(scores):
                keep = scores > 0.5
                return scores[keep]  # error

            g = torch.npu.NPUGraph()
            static_scores = torch.zeros(8, device="npu")
            g.capture_begin()
            out = select(static_scores)
            idx = torch.nonzero(static_scores)  # error
            g.capture_end()
        """),
        snippet("""
            import torch
            from torch import nn

            class Router(nn.Module):
                def forward(self, logits):
                    torch.npu.synchronize()  # error
                    rows = torch.where(logits > 0)  # error
                    kept = logits[logits > 0]  # error
                    return kept.unique()  # error

            router = torch.compile(Router(), backend="npugraph_ex")
        """),
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(logits, replacement):
                logits[logits > 0] = replacement  # error
                logits[logits < 0] += 1  # error
                return logits
        """),
    ]


_SCALAR_LITERALS = (cst.Integer, cst.Float, cst.Imaginary)
_TYPE_LIMITS = frozenset({"torch.finfo", "torch.iinfo"})


def _is_scalar(expr: cst.BaseExpression, ctx: SiteContext) -> bool:
    """A Python number: a literal, ``True``/``False``, ``float("-inf")``, ``math.inf``,
    ``torch.finfo(dtype).min``, or arithmetic of them."""
    if isinstance(expr, _SCALAR_LITERALS):
        return True
    if isinstance(expr, cst.Name):  # True, an ``int`` parameter, a size read from a shape
        return expr.value in ("True", "False") or ctx.dynamic_int(expr) is not None
    if isinstance(expr, cst.UnaryOperation):
        return _is_scalar(expr.expression, ctx)
    if isinstance(expr, cst.BinaryOperation):
        return _is_scalar(expr.left, ctx) and _is_scalar(expr.right, ctx)
    if isinstance(expr, cst.Call):  # float("-inf"); not float(t), itself a read-back
        return ctx.qualify(expr.func) in ("float", "int", "bool") and all(
            isinstance(arg.value, cst.SimpleString) or _is_scalar(arg.value, ctx) for arg in expr.args
        )
    if isinstance(expr, cst.Attribute):
        owner = expr.value
        if isinstance(owner, cst.Call) and ctx.qualify(owner.func) in _TYPE_LIMITS:
            return True
        return (ctx.qualify(expr) or "").startswith("math.")
    return False
