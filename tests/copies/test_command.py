"""``graphlint copies`` end to end: the CLI runs the real ladder (eager, dynamo, aot, torchair)
in its worker and prints the report; these tests parse what it prints or writes."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from graphlint.cli import main
from tests.copies.markers import SAMPLES, marked_copies
from tests.expectations import read_expectations

INPLACE = SAMPLES / "inplace_heavy.py"
# The block's output, transposed and made contiguous: one more layout copy.
ADDED_CONTIGUOUS = ("        return hidden\n", "        return hidden.t().contiguous()\n")
# HTML, and a byte that is not UTF-8 (a Latin-1 file system: Python decodes it to "\udce9").
HOSTILE_NAME = "<img src=x onerror=alert(2)>donn" + os.fsdecode(b"\xe9") + "es.py"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["copies", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A copy of the in-place sample and its JSON report, written by the CLI."""
    folder = tmp_path_factory.mktemp("copies-baseline")
    model = folder / "block.py"
    shutil.copy(INPLACE, model)
    report = folder / "baseline.json"
    assert main(["copies", str(model), "--format", "json", "--output", str(report)]) == 0
    return model, report


def test_json_is_the_design_copies_field(baseline: tuple[Path, Path]) -> None:
    model, report_path = baseline
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["aten"] == read_expectations(INPLACE).copies
    assert report["target"] == str(model)
    assert [s["name"] for s in report["stages"]] == ["eager", "dynamo", "aot", "torchair"]
    found = sorted((e["line"], e["op"]) for e in report["by_line"] if e["level"] == "aten" for _ in range(e["count"]))
    assert found == sorted(marked_copies(INPLACE))
    assert {e["file"] for e in report["by_line"] if e["level"] == "aten"} == {str(model)}
    hidden_bytes = 4 * 16 * 4  # a (4, DIM) float32 input
    assert report["totals"]["aten"] == {"ops": 9, "copies": 3, "share": round(3 / 9, 4), "bytes": 3 * hidden_bytes}
    assert {s["kind"] for s in report["suggestions"]} == {"copies-input-mutation"}


def test_baseline_catches_an_added_contiguous(baseline: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    model, report_path = baseline
    source = model.read_text(encoding="utf-8")
    assert ADDED_CONTIGUOUS[0] in source
    model.write_text(source.replace(*ADDED_CONTIGUOUS), encoding="utf-8")
    try:
        status, out, _ = run_cli(
            capsys, str(model), "--format", "json", "--baseline", str(report_path), "--fail-on-increase"
        )
    finally:
        model.write_text(source, encoding="utf-8")
    assert status == 1
    diff = json.loads(out)["baseline"]
    assert diff["grew"] is True
    assert [o for o in diff["ops"] if o["level"] == "aten" and o["change"]] == [
        {"level": "aten", "op": "clone", "old": 0, "new": 1, "change": 1}
    ]
    assert diff["totals"][0] == {"level": "aten", "old": 3, "new": 4, "change": 1}
    line = source.splitlines().index(ADDED_CONTIGUOUS[0].rstrip("\n")) + 1
    added = [ln for ln in diff["lines"] if ln["level"] == "aten"]
    assert [(ln["file"], ln["line"], ln["op"], ln["old"], ln["new"]) for ln in added] == [
        (str(model), line, "clone", 0, 1)
    ]


def test_rewrite_against_the_baseline_shrinks_and_passes(
    baseline: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, report_path = baseline
    page = tmp_path / "copies.html"
    status, out, err = run_cli(
        capsys, str(SAMPLES / "inplace_heavy_rewritten.py"), "--format", "html", "--output", str(page),
        "--baseline", str(report_path), "--fail-on-increase",
    )
    assert (status, out) == (0, ""), err
    html = page.read_text(encoding="utf-8")
    assert "copies did not grow" in html
    assert "<td>aten</td><td>all copies</td><td>all lines</td><td class=n>3</td><td class=n>0</td>" in html


@pytest.mark.parametrize("fmt", ["text", "json", "html"])
def test_a_file_name_that_is_html_and_not_utf8_is_spelled_out_and_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    model = tmp_path / HOSTILE_NAME
    shutil.copy(INPLACE, model)
    output = tmp_path / f"copies.{fmt}"
    status, out, err = run_cli(capsys, str(model), "--format", fmt, "--output", str(output))
    assert (status, out) == (0, ""), err
    written = output.read_text(encoding="utf-8")
    if fmt == "json":
        assert json.loads(written)["target"].endswith("<img src=x onerror=alert(2)>donn\\udce9es.py")
    elif fmt == "html":
        assert "<img" not in written and "&lt;img src=x onerror=alert(2)&gt;donn\\udce9es.py" in written
    else:
        assert "<img src=x onerror=alert(2)>donn\\udce9es.py" in written

