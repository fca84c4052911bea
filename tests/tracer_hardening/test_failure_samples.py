"""Every hostile target of samples/failures/ gives the verdict and findings its header states, a
complete report (on stdout and in --dump), the right exit status, no process left behind and
its folder untouched. A target whose own code fails while loading (it raises, or its factory
returns the wrong shape of thing) gets that finding (GT012) in a complete report and exit
status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphlint.tracer.locate import is_library_file
from tests.expectations import read_expectations
from tests.tracer_hardening.conftest import FAILURES, FailureTrace, TraceRun

SAMPLES = sorted(FAILURES.glob("*.py"))
# Each worker start imports torch, so a sample runs only the stages that make its point.
SAMPLE_OPTIONS: dict[str, tuple[str, ...]] = {
    "hang_in_forward": ("--stages", "eager", "--timeout", "10"),
    "oom_in_forward": ("--stages", "eager", "--memory-limit", "3"),
    "thread_keeps_running": ("--stages", "eager,dynamo"),  # dynamo runs while the thread does
    "dump_path_names": ("--stages", "eager,dynamo"),  # depyf's dump is written by dynamo
}
DEFAULT_OPTIONS = ("--stages", "eager")


def options_of(sample: Path) -> tuple[str, ...]:
    return SAMPLE_OPTIONS.get(sample.stem, DEFAULT_OPTIONS)


def requested_stages(options: tuple[str, ...]) -> list[str]:
    return options[options.index("--stages") + 1].split(",")


def run_of(failure_trace: FailureTrace, stem: str) -> TraceRun:
    sample = FAILURES / f"{stem}.py"
    return failure_trace(sample, *options_of(sample))


def test_every_failure_sample_has_its_options_or_the_default() -> None:
    assert set(SAMPLE_OPTIONS) <= {s.stem for s in SAMPLES}


# A hung stage costs --timeout; a trace that waited on a thread the target left running would
# cost the default --timeout (300 s) and be stopped here instead.
@pytest.mark.timeout(240)
@pytest.mark.parametrize("sample", SAMPLES, ids=[s.stem for s in SAMPLES])
def test_failure_sample_gives_its_stated_outcome_and_leaves_nothing_behind(
    sample: Path, failure_trace: FailureTrace
) -> None:
    expected = read_expectations(sample)
    assert expected.trace_verdict is not None, f"{sample.name} has no `# expect-trace:` header"
    run = failure_trace(sample, *options_of(sample))

    assert run.left == {}, f"processes outlived the trace: {run.left}"
    assert run.changed == set(), f"the trace changed the target's folder: {run.changed}"
    assert any("graphlint.tracer.worker" in cmd for cmd in run.seen.values())  # the watch saw the run

    report = run.report
    assert report is not None, f"no report; stderr:\n{run.stderr[-2000:]}"
    verdict = report["verdict"]["layer"]
    assert verdict == (None if expected.trace_verdict == "none" else expected.trace_verdict), report["verdict"]
    load_failed = any(f["kind"] == "load-error" for f in report["findings"])
    assert run.status == (2 if load_failed else 0 if verdict is None else 1)
    # complete: a row for every stage asked for, and the same report on disk
    assert [s["name"] for s in report["stages"]] == requested_stages(options_of(sample))
    assert json.loads((run.dump / "report.json").read_text(encoding="utf-8")) == report
    assert (run.dump / "report.html").is_file()
    found = {(f["code"], f["line"]) for f in report["findings"] if f["file"] and Path(f["file"]).resolve() == sample}
    assert expected.trace_findings <= found, f"missing {expected.trace_findings - found}; found {found}"
    for finding in report["findings"]:
        assert finding["file"] is None or not is_library_file(finding["file"]), finding
    # --dump wrote nothing beside its folder
    assert [p for p in run.dump.parent.rglob("*") if run.dump not in (p, *p.parents)] == []
