"""Every sample of samples/distributed/ run on two ranks gives the merged verdict, the findings
and the named ranks its header states."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.distributed.conftest import SAMPLES
from tests.expectations import read_expectations

SAMPLE_FILES = sorted(SAMPLES.glob("*.py"))
# A per-stage timeout short enough for the sample that hangs, generous for the others.
TIMEOUTS = {"rank_sleeps": "10"}


@pytest.mark.parametrize("sample", SAMPLE_FILES, ids=[s.stem for s in SAMPLE_FILES])
def test_sample_gives_its_stated_merged_verdict(sample: Path, distributed_run) -> None:
    expected = read_expectations(sample)
    assert expected.trace_verdict is not None, f"{sample.name} has no `# expect-trace:` header"
    status, report = distributed_run(sample, 2, "--timeout", TIMEOUTS.get(sample.stem, "120"))

    assert report["world_size"] == 2
    assert [entry["rank"] for entry in report["ranks"]] == [0, 1]
    assert all(entry["reported"] for entry in report["ranks"]), "a rank wrote no report"
    verdict = report["verdict"]["layer"]
    assert verdict == (None if expected.trace_verdict == "none" else expected.trace_verdict), report["verdict"]
    assert status == (0 if verdict is None else 1)

    in_sample = [f for f in report["findings"] if f["file"] and Path(f["file"]).resolve() == sample.resolve()]
    found = {(f["code"], f["line"]) for f in in_sample}
    assert expected.trace_findings <= found, f"missing {expected.trace_findings - found}; found {found}"
    named = {f["code"]: set(f["ranks"]) for f in report["findings"] if f["layer"] == "distributed"}
    assert named == expected.ranks, report["findings"]
    if verdict == "distributed":  # the verdict is the first distributed finding, naming its ranks
        first = next(f for f in report["findings"] if f["layer"] == "distributed")
        assert report["verdict"]["ranks"] == first["ranks"]
        assert first["hint"] and first["refs"], "distributed findings get a hint from the knowledge base"
