"""Each stage sees the target as a user's first call would: the eager stage's first call
installs hooks under a lock and fills in a config field; dynamo still sees the fresh model (and
its graph break at the lock), and the report says what the first call changed."""

from __future__ import annotations

from graphlint.tracer.first_call import module_state, pristine_copy, state_changes
from graphlint.tracer.target import load_target
from tests.tracer.conftest import TARGETS, TraceRun

TARGET = TARGETS / "first_call_state.py"


def line_of(text: str) -> int:
    return next(n for n, line in enumerate(TARGET.read_text(encoding="utf-8").splitlines(), 1) if text in line)


def test_dynamo_sees_the_model_before_its_first_call(trace_json: TraceRun) -> None:
    status, report = trace_json(TARGET, "--stages", "eager,dynamo")
    assert status == 1
    [brk] = [f for f in report["findings"] if f["kind"] == "graph-break"]
    assert brk["line"] == line_of("with _INSTALL:")
    [note] = [f for f in report["findings"] if f["kind"] == "first-call-state"]
    assert (note["stage"], note["severity"], note["details"]["isolated"]) == ("eager", "info", True)
    assert note["details"]["changes"] == [
        "InstallsHooksOnce.config.num_buckets: None → 4",
        "InstallsHooksOnce.hooks_installed: False → True",
        "InstallsHooksOnce.proj forward hooks: none → 1",
    ]


def test_the_copy_is_taken_before_any_call() -> None:
    target = load_target(str(TARGET))
    copy = pristine_copy(target)
    assert copy is not None and copy.fn is not target.fn
    before, copy_before = module_state(target), module_state(copy)
    target.fn(*target.inputs[0])
    assert state_changes(before, module_state(target))
    assert not state_changes(copy_before, module_state(copy))  # the copy stays as loaded
