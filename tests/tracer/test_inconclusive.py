"""A stage that ran but could not do its check is ``inconclusive``, never ``passed``: the
verdict names it, the text report says so, and ``--strict`` turns it into exit status 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.tracer.findings import Finding
from graphlint.tracer.report.build import exit_status
from graphlint.tracer.stages.base import StageContext, TraceOptions
from graphlint.tracer.stages.capture import MODE_VARIABLE, CaptureStage
from graphlint.tracer.stages.eager import EagerStage
from graphlint.tracer.target import load_target
from tests.tracer.conftest import REPO, TARGETS, TraceRun, run_cli

NOTHING_TO_CAPTURE = TARGETS / "nothing_to_capture.py"
AUDIT_STOPS_EARLY = TARGETS / "audit_stops_early.py"


def capture_result(target: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(MODE_VARIABLE, "audit")
    ctx = StageContext(load_target(str(target)), TraceOptions(stages=("capture",)))
    return CaptureStage().run(ctx)


def test_an_audit_of_no_graph_is_inconclusive(monkeypatch: pytest.MonkeyPatch) -> None:
    result = capture_result(NOTHING_TO_CAPTURE, monkeypatch)
    assert (result.status, result.graphs) == ("inconclusive", 0)
    assert result.reason == "no graph was audited"


def test_an_audit_that_stops_early_is_inconclusive(monkeypatch: pytest.MonkeyPatch) -> None:
    result = capture_result(AUDIT_STOPS_EARLY, monkeypatch)
    assert result.status == "inconclusive", result.findings
    assert "this model only runs on the host" in result.reason
    assert [f.kind for f in result.findings] == ["audit-incomplete"]


def test_an_error_still_fails_a_stage_that_was_also_inconclusive() -> None:
    stage = EagerStage()
    error = Finding(layer="model", stage="eager", kind="exception", message="boom")
    assert stage.result(0.0, [error], inconclusive="not checked").status == "failed"
    assert stage.result(0.0, [], inconclusive="not checked").to_json()["reason"] == "not checked"


def test_the_verdict_names_inconclusive_stages_and_strict_exits_1(trace_json: TraceRun) -> None:
    status, report = trace_json(NOTHING_TO_CAPTURE, "--stages", "eager,capture")
    assert status == 0
    assert [(s["name"], s["status"]) for s in report["stages"]] == [("eager", "passed"), ("capture", "inconclusive")]
    verdict = report["verdict"]
    assert (verdict["layer"], verdict["inconclusive"]) == (None, ["capture"])
    assert "capture could not do its check (capture: no graph was audited)" in verdict["summary"]
    assert exit_status(report, strict=True) == 1
    strict, _, _ = run_cli("trace", str(NOTHING_TO_CAPTURE), "--stages", "eager,capture", "--strict", "--format", "json")
    assert strict == 1


def test_the_text_report_never_says_passed_for_an_inconclusive_run() -> None:
    status, out, _ = run_cli("trace", str(NOTHING_TO_CAPTURE), "--stages", "eager,capture")
    assert status == 0
    assert "verdict: inconclusive" in out and "all stages passed" not in out


@pytest.mark.usefixtures("audit_kernels_refused")
def test_an_audit_whose_stand_in_kernels_this_torch_refuses_is_inconclusive(monkeypatch: pytest.MonkeyPatch) -> None:
    """The path torch 2.6–2.8 took before the Meta kernels were registered the way each accepts."""
    result = capture_result(REPO / "samples" / "capture" / "item_sync.py", monkeypatch)
    assert (result.status, result.graphs, result.findings) == ("inconclusive", 0, [])
    assert result.reason.startswith("the audit could not run on this torch: could not register the audit's Meta kernel")
    assert "already a kernel registered from python" in result.reason
    # torch's own registrations went through: a first import of dynamo under the refusal completed
    import torch._dynamo

    assert isinstance(torch._dynamo.config.suppress_errors, bool)
