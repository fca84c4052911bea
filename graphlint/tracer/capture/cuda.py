"""CUDA mode (stage mode ``cuda``): capture for real on a CUDA GPU, in two ways.

1. ``torch.compile(mode="reduce-overhead")``: inductor with CUDA-graph trees, each input called
   once to warm up, once to record and twice to replay. Inductor does not fail when it cannot
   capture, it logs "skipping cudagraphs due to …" (or "disabling cudagraphs due to …") and runs
   the graph uncaptured; those messages, which carry the FX stack trace of the node at fault,
   become findings at the user's line.
2. The aot-compiled callable (``backend="aot_eager"``) warmed up on a side stream, then captured
   with ``torch.cuda.graph`` and replayed twice: what capture forbids raises here ("operation
   not permitted when stream is capturing", an invalidated capture), at the user's line.

The replayed outputs of both are compared with eager. The target's inputs, parameters and
buffers are copied to the GPU for the run and the model is left where it was.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from graphlint.tracer.calls import eager_outputs, fresh_inputs
from graphlint.tracer.capture.codes import HOST_DEVICE_COPY, HOST_TENSOR, SYNC, CaptureCode
from graphlint.tracer.capture.outcome import STAGE, CaptureOutcome, attempt, compare_replay
from graphlint.tracer.capture.placement import modules_moved_to, modules_reached_by, moved_to
from graphlint.tracer.findings import Finding
from graphlint.tracer.knowledge import annotate
from graphlint.tracer.locate import user_line_of_stack_trace
from graphlint.tracer.stages.base import StageContext

WARMUPS = 1  # calls before capture: compile, and let lazy initialisation happen off the graph
REPLAYS = 2
# Inductor's artifact logger for CUDA-graph decisions; its messages reach handlers attached to it
# whether or not TORCH_LOGS enables the artifact.
CUDAGRAPH_LOGGER = "torch._inductor.cudagraph_utils.__cudagraphs"
_SKIP = re.compile(r"(?:skipping|disabling) cudagraphs due to (?P<reason>.+)", re.DOTALL)
# What a skip reason says about the user's code, in the capture codes' vocabulary.
SKIP_REASON_CODES: tuple[tuple[str, CaptureCode], ...] = (
    ("cpu device", HOST_TENSOR),
    ("DeviceCopy", HOST_DEVICE_COPY),
    ("multiple devices", HOST_DEVICE_COPY),
    ("incompatible op", SYNC),
)


def capture(ctx: StageContext) -> CaptureOutcome:
    """The stage's ``cuda`` mode."""
    import torch

    reference = eager_outputs(ctx)
    target, device = ctx.target, torch.device("cuda")
    inputs = [moved_to(args, device) for args in fresh_inputs(target)]
    kwargs = [moved_to(kw, device) for kw in target.kwargs]
    findings: list[Finding] = []
    with modules_moved_to(modules_reached_by(target.fn), device), torch.no_grad():
        with collected_messages(CUDAGRAPH_LOGGER) as skip_messages:
            trees_outputs = attempt(
                findings, target.user_files, "cudagraph-trees", lambda: cudagraph_trees(target.fn, inputs, kwargs)
            )
        findings += [skip_finding(m, target.user_files) for m in skip_messages if _SKIP.search(m)]
        graph_output = attempt(
            findings, target.user_files, "torch.cuda.graph", lambda: graph_capture(target.fn, inputs[0], kwargs[0])
        )
    compare_replay(findings, "cudagraph-trees", reference, trees_outputs)
    compare_replay(findings, "torch.cuda.graph", reference, None if graph_output is None else [graph_output])
    annotated = [annotate(f, ctx.options.lang) for f in findings]
    return CaptureOutcome(annotated, graphs=None, artifacts={"device": torch.cuda.get_device_name()})


def cudagraph_trees(fn: Callable[..., Any], inputs: list[tuple[Any, ...]], kwargs: list[dict[str, Any]]) -> list[Any]:
    """``fn`` under ``mode="reduce-overhead"``; the last replay's outputs of each input, on the host."""
    import torch

    torch._dynamo.reset()
    compiled = torch.compile(fn, mode="reduce-overhead")
    outputs = []
    for args, kw in zip(inputs, kwargs, strict=True):
        for _ in range(WARMUPS + 1 + REPLAYS):  # warm up, record, replay
            out = moved_to(compiled(*args, **kw), "cpu")  # the next replay overwrites its buffers
        outputs.append(out)
    return outputs


def graph_capture(fn: Callable[..., Any], args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    """The aot-compiled ``fn`` captured with ``torch.cuda.graph`` and replayed; its outputs."""
    import torch

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="aot_eager")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(WARMUPS):
            compiled(*args, **kw)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_outputs = compiled(*args, **kw)
    for _ in range(REPLAYS):
        graph.replay()
    torch.cuda.synchronize()
    return moved_to(static_outputs, "cpu")


def skip_finding(message: str, user_files: set[str]) -> Finding:
    """A finding for inductor's "skipping cudagraphs due to …" message; the stack trace it quotes
    gives the user's line, and the reason the code (warning when the reason names none)."""
    reason = _SKIP.search(message)["reason"]  # type: ignore[index]
    code = next((c for marker, c in SKIP_REASON_CODES if marker in reason), None)
    where = user_line_of_stack_trace(message, user_files)
    return Finding(
        layer="capture",
        stage=STAGE,
        kind=code.kind if code else "cudagraph-skip",
        code=code.code if code else None,
        severity="error" if code else "warning",
        message=f"CUDA graphs skipped: {reason.split('. Found from')[0].strip()}",
        file=where[0] if where else None,
        line=where[1] if where else None,
        details={"run": "cudagraph-trees"},
    )


@contextmanager
def collected_messages(logger_name: str) -> Iterator[list[str]]:
    """The messages logged to ``logger_name`` (at WARNING or above) while active."""
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    logger, handler = logging.getLogger(logger_name), Collect(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
