"""Every sample of samples/trace/ gives the verdict and the findings its header states."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.expectations import read_expectations
from tests.tracer.conftest import REPO

SAMPLES = sorted((REPO / "samples" / "trace").glob("*.py"))
# Static samples of the graph-break rules that also say where dynamo breaks: each is traced
# through its first two stages, which is where a graph break shows.
BREAKING_STATIC = sorted(
    p for p in (REPO / "samples" / "static").rglob("*.py") if read_expectations(p).trace_verdict is not None
)


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.stem for s in SAMPLES])
def test_sample_gives_its_stated_verdict_and_findings(sample: Path, trace_json, torch_npu_wheel) -> None:
    expected = read_expectations(sample)
    assert expected.trace_verdict is not None, f"{sample.name} has no `# expect-trace:` header"
    status, report = trace_json(os.path.relpath(sample))

    verdict = report["verdict"]["layer"]
    assert verdict == (None if expected.trace_verdict == "none" else expected.trace_verdict), report["verdict"]
    assert status == (0 if verdict is None else 1)
    found = {
        (f["code"], f["line"])
        for f in report["findings"]
        if f["file"] and Path(f["file"]).resolve() == sample.resolve()
    }
    assert expected.trace_findings <= found, f"missing {expected.trace_findings - found}; found {found}"
    # the finding the verdict is about carries the user's line, never a torch-internal frame
    for finding in report["findings"]:
        if finding["file"]:
            assert "site-packages" not in finding["file"] and not finding["file"].startswith("<")


def test_static_finding_on_a_line_the_trace_saw_break_is_confirmed(trace_json, torch_npu_wheel) -> None:
    sample = REPO / "samples" / "trace" / "str_on_symint.py"
    _, report = trace_json(os.path.relpath(sample))
    static = report["static"]
    assert static["error"] is None
    marks = {(f["code"], f["line"]): f["confirmed"] for f in static["findings"]}
    assert marks == {("GL102", 21): True}  # the trace's GB0059 is on the same line


def test_static_findings_not_seen_by_the_trace_stay_unconfirmed(trace_json, torch_npu_wheel) -> None:
    sample = REPO / "samples" / "trace" / "capture_unsafe_copy.py"
    _, report = trace_json(os.path.relpath(sample))
    traced = {(f["file"], f["line"]) for f in report["findings"]}
    for finding in report["static"]["findings"]:
        assert finding["confirmed"] == ((os.path.relpath(finding["path"]), finding["line"]) in traced)


def test_the_hint_follows_what_a_break_means_whatever_code_this_torch_gives_it(trace_json, torch_npu_wheel) -> None:
    sample = REPO / "samples" / "trace" / "str_on_symint.py"
    _, report = trace_json(os.path.relpath(sample))
    (str_break,) = [f for f in report["findings"] if f["kind"] == "graph-break" and f["line"] == 21]
    assert str_break["details"]["meaning"] == "str-on-symint"  # GB0059 up to torch 2.13, GB6053 in 2.14
    assert str_break["refs"] == ["torchair#602"] and "str()" in str_break["hint"]


@pytest.mark.parametrize("sample", BREAKING_STATIC, ids=[s.stem for s in BREAKING_STATIC])
def test_a_static_sample_breaks_where_its_rule_says_and_the_finding_is_confirmed(
    sample: Path, trace_json, torch_npu_wheel
) -> None:
    """The static rule's finding and dynamo's break are one: the same line (and, where this
    torch names it, the code the rule predicts), so the trace marks the finding confirmed."""
    expected = read_expectations(sample)
    status, report = trace_json(os.path.relpath(sample), "--stages", "eager,dynamo")
    assert (status, report["verdict"]["layer"]) == (1, expected.trace_verdict), report["verdict"]
    found = {(f["code"], f["line"]) for f in report["findings"] if f["file"] and Path(f["file"]).resolve() == sample}
    assert expected.trace_findings <= found, f"missing {expected.trace_findings - found}; found {found}"
    static = {(f["code"], f["line"]): f["confirmed"] for f in report["static"]["findings"]}
    assert static == {finding: True for finding in expected.check}
