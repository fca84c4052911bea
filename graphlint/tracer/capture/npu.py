"""NPU mode (stage mode ``real``): capture with torchair on an Ascend NPU, and replay.

For each capture backend the installed torch_npu offers (torchair's ``mode="reduce-overhead"``
(aclgraph), and the ``npugraph_ex`` backend where torch_npu registers it) the target is compiled,
called once per input (capture), replayed twice and compared with eager; then it is replayed
from another stream, which torchair refuses ("different stream", pytorch#1497). Errors become
findings at the user's line, classified through the knowledge base (torchair#236 "Not allow to
sync captured-stream", pytorch#1497, torchair#310 "Cannot prepare for replay").

Every call that needs the device goes through ``NpuDevice``; ``TorchNpuDevice`` is the real one.
The rest (the order of runs, comparison, classification) is what the CPU tests exercise with a
stand-in device.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

from graphlint.tracer.calls import eager_outputs, fresh_inputs
from graphlint.tracer.capture.outcome import CaptureOutcome, attempt, compare_replay
from graphlint.tracer.capture.placement import modules_moved_to, modules_reached_by, moved_to
from graphlint.tracer.findings import Finding
from graphlint.tracer.knowledge import annotate
from graphlint.tracer.stages.base import StageContext
from graphlint.tracer.torchair.locate import installed_torch_npu

REPLAYS = 2
REDUCE_OVERHEAD = "reduce-overhead"  # torchair's CompilerConfig mode for aclgraph capture
NPUGRAPH_EX = "npugraph_ex"  # torch_npu's capture backend, where registered


class NpuDevice(Protocol):
    """What the NPU mode needs from the device."""

    device: str  # where the target's tensors go ("npu")

    def capture_backends(self) -> list[str]:
        """The capture backends available: ``REDUCE_OVERHEAD`` and, where present, ``NPUGRAPH_EX``."""

    def backend(self, name: str) -> Any:
        """What to pass as ``torch.compile(backend=...)`` for a capture backend."""

    def other_stream(self) -> AbstractContextManager[None]:
        """A context in which calls run on a stream other than the one captured on."""

    def synchronize(self) -> None: ...


class TorchNpuDevice:
    """The real device: torch_npu and torchair, imported only when used."""

    device = "npu"

    def capture_backends(self) -> list[str]:
        import torch

        registered = torch._dynamo.list_backends(exclude_tags=())
        return [REDUCE_OVERHEAD] + ([NPUGRAPH_EX] if NPUGRAPH_EX in registered else [])

    def backend(self, name: str) -> Any:
        if name == NPUGRAPH_EX:
            return NPUGRAPH_EX
        import torchair

        config = torchair.CompilerConfig()
        config.mode = REDUCE_OVERHEAD
        return torchair.get_npu_backend(compiler_config=config)

    @contextmanager
    def other_stream(self) -> Iterator[None]:
        import torch

        with torch.npu.stream(torch.npu.Stream()):
            yield

    def synchronize(self) -> None:
        import torch

        torch.npu.synchronize()


def npu_available() -> bool:
    """torch_npu installed with CANN, importable, and an NPU visible."""
    source = installed_torch_npu()
    if source is None or not source.has_cann:
        return False
    try:
        import torch_npu  # noqa: F401  registers torch.npu
    except Exception:  # a broken CANN install fails in many ways on import
        return False
    import torch

    return bool(torch.npu.is_available())


def capture(ctx: StageContext, device: NpuDevice | None = None) -> CaptureOutcome:
    """The stage's ``real`` mode; ``device`` is the real NPU unless a test gives a stand-in."""
    import torch

    device = device or TorchNpuDevice()
    reference = eager_outputs(ctx)
    target = ctx.target
    inputs = [moved_to(args, device.device) for args in fresh_inputs(target)]
    kwargs = [moved_to(kw, device.device) for kw in target.kwargs]
    findings: list[Finding] = []
    backends = device.capture_backends()
    with modules_moved_to(modules_reached_by(target.fn), device.device), torch.no_grad():
        for name in backends:

            def capture_and_replay(name: str = name) -> tuple[Callable[..., Any], list[Any]]:
                torch._dynamo.reset()
                compiled = torch.compile(target.fn, backend=device.backend(name))
                return compiled, replayed(compiled, inputs, kwargs, device)

            captured = attempt(findings, target.user_files, name, capture_and_replay)
            if captured is None:
                continue
            compiled, outputs = captured
            compare_replay(findings, name, reference, outputs)
            # captured: now replay where torchair does not allow it
            on_other_stream = functools.partial(replayed_on_other_stream, compiled, inputs[0], kwargs[0], device)
            attempt(findings, target.user_files, f"{name} on another stream", on_other_stream)
    annotated = [annotate(f, ctx.options.lang) for f in findings]
    return CaptureOutcome(annotated, graphs=None, artifacts={"backends": backends})


def replayed(
    compiled: Callable[..., Any], inputs: list[tuple[Any, ...]], kwargs: list[dict[str, Any]], device: NpuDevice
) -> list[Any]:
    """Each input called once (capture) and ``REPLAYS`` more times; the last outputs, on the host."""
    outputs = []
    for args, kw in zip(inputs, kwargs, strict=True):
        for _ in range(1 + REPLAYS):
            out = compiled(*args, **kw)
        device.synchronize()
        outputs.append(moved_to(out, "cpu"))
    return outputs


def replayed_on_other_stream(
    compiled: Callable[..., Any], args: tuple[Any, ...], kw: dict[str, Any], device: NpuDevice
) -> None:
    with device.other_stream():
        compiled(*args, **kw)
        device.synchronize()
