"""The capture samples: each gives the trace its header states, and `graphlint check` (static)
agrees with the audit (dynamic) on every code and line, except where the sample documents why
they cannot agree (``# trace-only: CODE@LINE why`` / ``# check-only: CODE@LINE why``)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from graphlint.tracer.findings import StageResult
from graphlint.tracer.stages.capture import MODE_VARIABLE
from tests.capture.conftest import CAPTURE_SAMPLES, OTHER_CAPTURE_SAMPLES
from tests.expectations import header_lines, read_expectations
from tests.tracer.conftest import run_cli

CAPTURE_CODES = ("GL201", "GL202", "GL203", "GL204")
_DIFFERENCE = re.compile(r"^(?P<code>GL\d+)@(?P<line>\d+)\s+\S")


def documented_differences(sample: Path) -> dict[str, set[tuple[str, int]]]:
    """{"trace": {...}, "check": {...}}: what only one side reports, each with a reason (on this
    torch: ``# trace-only[torch 2.6]: ...`` lines replace the plain ones there)."""
    found: dict[str, set[tuple[str, int]]] = {"trace": set(), "check": set()}
    for key, body in header_lines(sample, ("trace-only", "check-only")):
        m = _DIFFERENCE.match(body)
        assert m, f"{sample.name}: `# {key}: {body}` is not CODE@LINE followed by why"
        found[key.removesuffix("-only")].add((m["code"], int(m["line"])))
    return found


def findings_in(findings: list[dict], sample: Path, path_key: str) -> set[tuple[str, int]]:
    return {
        (f["code"], f["line"])
        for f in findings
        if f.get("code") in CAPTURE_CODES and f.get(path_key) and Path(f[path_key]).resolve() == sample.resolve()
    }


@pytest.fixture(scope="module")
def static_findings() -> list[dict]:
    """One `graphlint check --format json` over every capture sample (parsing is per file)."""
    paths = [os.path.relpath(p) for p in CAPTURE_SAMPLES + OTHER_CAPTURE_SAMPLES]
    status, out, err = run_cli("check", "--format", "json", "--no-cache", *paths)
    assert status in (0, 1), err
    return json.loads(out)["findings"]


@pytest.mark.parametrize("sample", CAPTURE_SAMPLES, ids=[s.stem for s in CAPTURE_SAMPLES])
def test_capture_sample_gives_its_stated_audit(sample: Path, capture_stage_on) -> None:
    expected = read_expectations(sample)
    result = capture_stage_on(sample)
    assert result.mode == "audit"
    assert result.status == ("passed" if expected.trace_verdict == "none" else "failed"), result.reason
    # exactly the stated capture findings: no more (a false alarm), no fewer
    assert audit_findings(result, sample) == expected.trace_findings


def test_graphlint_trace_reports_a_capture_verdict_after_every_other_stage_passed(
    trace_json, torch_npu_wheel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MODE_VARIABLE, "audit")
    sample = next(s for s in CAPTURE_SAMPLES if s.stem == "host_to_device_copy")
    status, report = trace_json(os.path.relpath(sample))
    assert [(s["name"], s["status"]) for s in report["stages"]] == [
        ("eager", "passed"),
        ("dynamo", "passed"),
        ("aot", "passed"),
        ("torchair", "passed"),
        ("capture", "failed"),
    ]
    assert report["stages"][-1]["mode"] == "audit"
    assert (status, report["verdict"]["layer"]) == (1, "capture")
    assert findings_in(report["findings"], sample, "file") == read_expectations(sample).trace_findings
    assert all(f["refs"] == ["torchair#236"] and f["hint"] for f in report["findings"])


@pytest.mark.parametrize(
    "sample", CAPTURE_SAMPLES + OTHER_CAPTURE_SAMPLES, ids=[s.stem for s in CAPTURE_SAMPLES + OTHER_CAPTURE_SAMPLES]
)
def test_static_check_and_audit_agree(sample: Path, static_findings, capture_stage_on) -> None:
    static = findings_in(static_findings, sample, "path")
    assert static == read_expectations(sample).check, "`graphlint check` differs from the sample's header"
    dynamic = audit_findings(capture_stage_on(sample), sample)
    differences = documented_differences(sample)
    assert dynamic - static == differences["trace"]
    assert static - dynamic == differences["check"]


def audit_findings(result: StageResult, sample: Path) -> set[tuple[str, int]]:
    return findings_in([f.to_json() for f in result.findings], sample, "file")
