"""The report's writers and CI gate: --dump (graphs, decompiled code, report.json, a
self-contained report.html), --baseline/--fail-on-increase, and the text report."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from graphlint.tracer.report.baseline import compare_with_baseline
from tests.tracer.conftest import run_cli

SAMPLE = "samples/trace/data_dependent_branch.py"


@pytest.fixture(scope="module")
def dumped(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path, str]:
    folder = tmp_path_factory.mktemp("dump")
    status, out, _ = run_cli("trace", SAMPLE, "--stages", "eager,dynamo,aot", "--dump", str(folder))
    return status, folder, out


def test_dump_writes_graphs_decompiled_code_and_both_reports(dumped: tuple[int, Path, str]) -> None:
    status, folder, _ = dumped
    assert status == 1
    dynamo_graphs = sorted(p.name for p in (folder / "dynamo").glob("*.py"))
    # The break splits forward; each graph is there as readable code and as a runnable module.
    assert dynamo_graphs == [f"graph_{i}{kind}.py" for i in range(3) for kind in ("", ".runnable")]
    assert "class Repro" in (folder / "dynamo" / "graph_0.runnable.py").read_text()
    assert "class GraphModule" in (folder / "dynamo" / "graph_0.py").read_text()
    assert list((folder / "aot").glob("graph_0_forward.py"))
    decompiled = list((folder / "decompiled").iterdir())
    assert decompiled  # depyf's source, or a note of why it could not decompile
    assert all(p.suffix == ".py" or p.name.endswith(".FAILED.txt") for p in decompiled)
    report = json.loads((folder / "report.json").read_text())
    assert report["verdict"]["layer"] == "dynamo"
    html = (folder / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "GB0170" in html
    assert "<script" not in html and "http" not in html.split("</style>")[0]  # self-contained


def test_text_report_has_the_stage_table_verdict_and_code_frame(dumped: tuple[int, Path, str]) -> None:
    _, _, out = dumped
    for words in ("stage", "status", "recompiles", "verdict: dynamo", "GB0170", "if too_large:", "hint:"):
        assert words in out, words


def test_html_escapes_every_user_string(tmp_path: Path) -> None:
    target = tmp_path / "evil.py"
    target.write_text(
        textwrap.dedent(
            """
            import torch

            def graphlint_target():
                def fn(x):
                    raise ValueError("<script>alert('x')</script>")
                return fn, (torch.ones(1),)
            """
        ),
        encoding="utf-8",
    )
    status, _, _ = run_cli("trace", str(target), "--stages", "eager", "--dump", str(tmp_path / "out"), "--format", "json")
    html = (tmp_path / "out" / "report.html").read_text()
    assert status == 1
    assert "<script>" not in html and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html


def test_baseline_gate_fails_when_something_grew(tmp_path: Path, trace_json) -> None:
    _, report = trace_json(SAMPLE, "--stages", "eager,dynamo")
    assert compare_with_baseline(report, report)["increases"] == []  # the same run: within budget
    smaller = json.loads(json.dumps(report))
    for row in smaller["stages"]:
        if row["name"] == "dynamo":
            row["graph_breaks"], row["graphs"] = 0, 1
    smaller["findings"] = []
    older = tmp_path / "older.json"
    older.write_text(json.dumps(smaller))
    status, out, _ = run_cli(
        "trace", SAMPLE, "--stages", "eager,dynamo", "--format", "json", "--baseline", str(older), "--fail-on-increase"
    )
    increases = json.loads(out)["baseline"]["increases"]
    assert status == 1
    assert "dynamo graph_breaks 0 → 1" in increases and "dynamo graphs 1 → 3" in increases
    assert "findings dynamo/graph-break/GB0170 0 → 1" in increases


def test_baseline_compares_counts_not_order() -> None:
    row = {"name": "dynamo", "status": "failed", "graphs": 2, "graph_breaks": 1, "recompiles": 0}
    finding = {"layer": "dynamo", "kind": "graph-break", "code": "GB0170", "count": 2}
    old = {"stages": [row], "findings": [finding]}
    new = {"stages": [{**row, "recompiles": 3}], "findings": [{**finding, "count": 1}]}
    assert compare_with_baseline(old, new)["increases"] == ["dynamo recompiles 0 → 3"]


def test_a_bad_baseline_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    status, _, err = run_cli("trace", SAMPLE, "--baseline", str(bad), "--fail-on-increase")
    assert status == 2 and "cannot read baseline" in err
