"""The NPU mode with a stand-in device: everything but the device calls runs for real (the
sample compiled with dynamo, replays compared with eager, errors placed and classified).

The error messages are the ones users see: "Unsupported run graph with different stream." is
in torch_npu 2.13.0's ``torchair/core/_torchair.so`` (found with ``strings``); "Not allow to sync
captured-stream" (CANN's runtime) and "Cannot prepare for replay" are quoted by the seed issues
torchair#236 and torchair#310.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch

from graphlint.tracer.capture.npu import NPUGRAPH_EX, REDUCE_OVERHEAD, REPLAYS, capture
from graphlint.tracer.stages.base import StageContext, TraceOptions
from graphlint.tracer.target import load_target
from tests.capture.conftest import CAPTURE_SAMPLES

CLEAN = next(s for s in CAPTURE_SAMPLES if s.stem == "clean")
OTHER_STREAM = "Unsupported run graph with different stream."


@dataclass
class StandInNpu:
    """Runs graphs eagerly on the CPU; ``fail`` decides what a graph call raises, given the
    backend's name and whether the call is on another stream."""

    fail: Callable[[str, bool], str | None] = lambda backend, other_stream: None
    scale: float = 1.0  # a wrong replay multiplies its outputs
    device: str = "cpu"
    backends: list[str] = field(default_factory=lambda: [REDUCE_OVERHEAD, NPUGRAPH_EX])
    calls: list[tuple[str, bool]] = field(default_factory=list)
    on_other_stream: bool = False

    def capture_backends(self) -> list[str]:
        return self.backends

    def backend(self, name: str) -> Any:
        def compile_graph(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
            def run(*args: Any) -> Any:
                self.calls.append((name, self.on_other_stream))
                message = self.fail(name, self.on_other_stream)
                if message:
                    raise RuntimeError(message)
                return [out * self.scale for out in gm(*args)]

            return run

        return compile_graph

    @contextmanager
    def other_stream(self) -> Iterator[None]:
        self.on_other_stream = True
        try:
            yield
        finally:
            self.on_other_stream = False

    def synchronize(self) -> None:
        pass


def npu_capture(device: StandInNpu, lang: str = "en"):
    ctx = StageContext(load_target(str(CLEAN)), TraceOptions(stages=("capture",), lang=lang))
    return capture(ctx, device)


def test_each_backend_captures_replays_and_is_tried_on_another_stream() -> None:
    device = StandInNpu(fail=lambda backend, other_stream: OTHER_STREAM if other_stream else None)
    outcome = npu_capture(device)
    assert device.calls == [
        *[(REDUCE_OVERHEAD, False)] * (1 + REPLAYS),
        (REDUCE_OVERHEAD, True),
        *[(NPUGRAPH_EX, False)] * (1 + REPLAYS),
        (NPUGRAPH_EX, True),
    ]
    assert [(f.kind, f.details["run"], f.refs) for f in outcome.findings] == [
        ("capture-error", f"{REDUCE_OVERHEAD} on another stream", ["pytorch#1497"]),
        ("capture-error", f"{NPUGRAPH_EX} on another stream", ["pytorch#1497"]),
    ]
    assert outcome.artifacts == {"backends": [REDUCE_OVERHEAD, NPUGRAPH_EX]}


@pytest.mark.parametrize(
    ("message", "signature", "refs"),
    [
        (
            "ACL stream synchronize failed, error code is 107027. Not allow to sync captured-stream",
            "sync-captured-stream",
            ["torchair#236"],
        ),
        ("Cannot prepare for replay during capturing stage.", "cannot-prepare-for-replay", ["torchair#310"]),
    ],
    ids=["sync-in-capture", "nested-compile"],
)
def test_a_capture_error_is_classified_by_the_knowledge_base(message: str, signature: str, refs: list[str]) -> None:
    device = StandInNpu(fail=lambda backend, other_stream: message, backends=[REDUCE_OVERHEAD])
    (finding,) = npu_capture(device, lang="zh").findings
    assert (finding.layer, finding.details["signature"], finding.refs) == ("capture", signature, refs)
    assert message in finding.message and finding.hint and any("\u4e00" <= ch <= "\u9fff" for ch in finding.hint)
    assert device.calls == [(REDUCE_OVERHEAD, False)]  # not replayed after a failed capture


def test_replays_that_differ_from_eager_are_an_accuracy_finding() -> None:
    outcome = npu_capture(StandInNpu(scale=1.5, backends=[NPUGRAPH_EX]))
    (finding,) = outcome.findings
    assert (finding.layer, finding.details["run"]) == ("accuracy", NPUGRAPH_EX)
    assert finding.message.startswith("capture output differs from eager by")
