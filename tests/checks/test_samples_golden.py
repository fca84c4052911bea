"""`graphlint check --format json` on every sample in samples/: exactly the findings its
``# expect-check:`` header states, and, where a sample has ``# expect-region: CODE@LINE KIND
ENTRYFILE:LINE CHAIN>CHAIN`` lines, the region each of those findings is in."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.checks.conftest import check_json
from tests.expectations import read_expectations

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
WITH_CHECK = sorted(
    p for p in SAMPLES.rglob("*.py") if read_expectations(p).check is not None
)
_REGION = re.compile(r"^#\s*expect-region:\s*(\w+)@(\d+)\s+(\w+)\s+(\S+):(\d+)\s+(\S+)\s*$")


@pytest.fixture(scope="module")
def report(cache_dir: Path) -> dict[str, Any]:
    status, data = check_json(str(SAMPLES), "--cache-dir", str(cache_dir))
    assert status == 1
    return data


def _findings_for(report: dict[str, Any], sample: Path) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if Path(f["path"]).resolve() == sample]


@pytest.mark.parametrize("sample", WITH_CHECK, ids=lambda p: p.relative_to(SAMPLES).as_posix())
def test_sample_findings_are_exactly_the_expected_ones(report: dict[str, Any], sample: Path) -> None:
    found = {(f["code"], f["line"]) for f in _findings_for(report, sample)}
    assert found == read_expectations(sample).check


@pytest.mark.parametrize(
    "sample",
    [p for p in WITH_CHECK if "expect-region:" in p.read_text(encoding="utf-8")],
    ids=lambda p: p.relative_to(SAMPLES).as_posix(),
)
def test_sample_regions(report: dict[str, Any], sample: Path) -> None:
    expected = Counter()
    for line in sample.read_text(encoding="utf-8").splitlines():
        m = _REGION.match(line)
        if m:
            code, at, kind, entry_file, entry_line, chain = m.groups()
            expected[(code, int(at), kind, entry_file, int(entry_line), tuple(chain.split(">")))] += 1
    assert expected, "expect-region lines must parse"
    found = Counter()
    for f in _findings_for(report, sample):
        region = f["region"]
        if region is None:
            continue
        entry_path, entry_line = region["entry"].rsplit(":", 1)
        key = (f["code"], f["line"], region["kind"], Path(entry_path).name, int(entry_line), tuple(region["chain"]))
        if any(k[:2] == key[:2] for k in expected):
            found[key] += 1
    assert found == expected


def test_every_static_sample_states_its_findings() -> None:
    static = sorted((SAMPLES / "static").rglob("*.py"))
    assert static and all(p in WITH_CHECK for p in static)


def test_one_file_of_a_package_is_linked_against_the_whole_project(cache_dir: Path) -> None:
    """pre-commit passes only changed files: helpers.py alone is still reached from run.py."""
    helpers = SAMPLES / "static" / "crossfile" / "helpers.py"
    status, data = check_json(str(helpers), "--cache-dir", str(cache_dir))
    assert status == 1
    assert {(f["code"], f["line"]) for f in data["findings"]} == read_expectations(helpers).check
    assert data["summary"]["files"] == 1
    chains = {tuple(f["region"]["chain"]) for f in data["findings"]}
    assert ("Decoder.forward", "DecoderLayer.forward", "build_positions") in chains
