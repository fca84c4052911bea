"""Replay fidelity in the capture stage: each replay sample gives exactly the findings its header
states, at the user's line, with the values at capture and at replay; the replay-safe sample
stays quiet; the report says which model of capture each result is for."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.tracer.capture.replay import GUARD_FREE, GUARDED, check_replays
from graphlint.tracer.stages.base import StageContext, TraceOptions
from graphlint.tracer.stages.capture import MODE_VARIABLE, CaptureStage
from graphlint.tracer.target import load_target
from tests.expectations import read_expectations
from tests.tracer.conftest import REPO, run_cli

REPLAY_SAMPLES = sorted((REPO / "samples" / "capture" / "replay").glob("*.py"))
REPLAY_CODES = ("GL205", "GL206", "GL207")


def sample(stem: str) -> Path:
    return next(s for s in REPLAY_SAMPLES if s.stem == stem)


@pytest.mark.parametrize("path", REPLAY_SAMPLES, ids=[s.stem for s in REPLAY_SAMPLES])
def test_replay_sample_gives_exactly_its_stated_findings(path: Path, capture_stage_on) -> None:
    expected = read_expectations(path)
    result = capture_stage_on(path)
    assert result.status == ("passed" if expected.trace_verdict == "none" else "failed"), result.reason
    found = {(f.code, f.line) for f in result.findings if f.code in REPLAY_CODES and f.file and Path(f.file) == path}
    assert found == {e for e in expected.trace_findings if e[0] in REPLAY_CODES}
    assert all(f.hint and f.refs for f in result.findings if f.code in REPLAY_CODES)
    assert result.artifacts["replay"]["guard_free"]["model"] == GUARD_FREE
    assert result.artifacts["replay"]["guarded"]["model"] == GUARDED


def test_a_baked_value_names_its_value_at_capture_and_at_replay() -> None:
    (finding,) = check_replays(load_target(str(sample("baked_value")))).findings
    assert (finding.kind, finding.severity, finding.count) == ("replay-mismatch", "error", 2)
    assert "an argument of truediv was 1.0 at capture and is 0.5 at this call" in finding.message
    assert finding.details["baked"][0]["at_replay"] == "0.5"


def test_a_replaced_weight_is_a_stale_address_at_the_line_that_replaced_it() -> None:
    (finding,) = check_replays(load_target(str(sample("stale_weights")))).findings
    assert finding.kind == "stale-address"
    assert finding.message.startswith("model.proj.weight is read by the captured graph (call 0) but was replaced here")
    assert finding.details["read_at"].endswith("stale_weights.py:21")  # self.proj(x): where the graph reads it


def test_a_tensor_handed_across_a_graph_break_is_no_stale_address() -> None:
    """After a graph break the resumed graph reads ``y``, the first graph's output: data of each
    call, which a guard-free engine capturing the whole forward writes again on every replay (a
    weight replaced between calls is stale; ``stale_weights`` above)."""
    symint = REPO / "samples" / "trace" / "str_on_symint.py"
    findings = check_replays(load_target(str(symint))).findings
    assert [f.code for f in findings] == ["GL207"]  # the recapture per batch size, and no GL206


def test_a_loop_count_that_changes_names_the_failing_guard() -> None:
    storm = REPO / "samples" / "trace" / "recompile_storm.py"
    (finding,) = check_replays(load_target(str(storm))).findings
    assert (finding.code, finding.line) == ("GL205", 16)
    assert "the guard `steps == 1` was true at capture" in finding.message


def test_the_recapture_budget_names_the_changing_dimension() -> None:
    target = load_target(str(sample("every_shape")))
    (past,) = check_replays(target).findings
    assert (past.kind, past.severity) == ("recapture-limit", "error")
    assert "70 calls need 70 graph captures, past the capture limit of 64" in past.message
    assert "dimension 0 of tokens takes 70 values" in past.message  # over all the calls, static graph and dynamic
    (every,) = check_replays(target, capture_limit=100).findings
    assert (every.kind, every.severity, every.line) == ("recapture", "warning", past.line)
    assert every.message.startswith("every call needs a graph capture of its own (70 for 70 calls)")


def test_the_clean_sample_replays_every_call_and_counts_its_captures() -> None:
    check = check_replays(load_target(str(sample("replay_clean"))))
    assert check.findings == []
    assert check.summary["calls"] == 5
    assert (check.summary["guard_free"]["captures"], check.summary["guard_free"]["replays"]) == (2, 3)


def test_a_single_input_has_nothing_to_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODE_VARIABLE, "audit")
    clean = REPO / "samples" / "capture" / "clean.py"
    result = CaptureStage().run(StageContext(load_target(str(clean)), TraceOptions(stages=("capture",))))
    assert "replay" not in result.artifacts


@pytest.mark.parametrize("limit", ["0", "-3", "many"])
def test_a_capture_limit_that_is_not_a_positive_number_is_a_usage_error(limit: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run_cli("trace", str(sample("replay_clean")), "--capture-limit", limit)
    assert exit_info.value.code == 2


def test_graphlint_trace_gives_the_capture_verdict_of_a_baked_value(trace_json, torch_npu_wheel) -> None:
    status, report = trace_json(str(sample("baked_value").relative_to(REPO)))
    assert (status, report["verdict"]["layer"]) == (1, "capture")
    assert [s["status"] for s in report["stages"]] == ["passed", "passed", "passed", "passed", "failed"]
    (finding,) = [f for f in report["findings"] if f["code"] == "GL205"]
    assert (finding["line"], finding["refs"][0]) == (22, "vllm-ascend#10895")
