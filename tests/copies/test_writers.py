"""The writers and the baseline comparison, on reports built from real compiled samples: the
rich table, the self-contained HTML page (and its escaping of user strings), ``--baseline``
input forms and the command's usage errors (which stop before any tracing)."""

from __future__ import annotations

import io
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from graphlint.cli import main
from graphlint.tracer.copies.aten import count_aten_copies
from graphlint.tracer.copies.baseline import compare, load_baseline
from graphlint.tracer.copies.html import render_html
from graphlint.tracer.copies.report import build_copies_report
from graphlint.tracer.copies.text import write_text
from graphlint.tracer.recording import GraphRecorder, run_compiled
from graphlint.tracer.target import load_target
from tests.copies.markers import SAMPLES, lines_of, marked_copies


def copies_report(path: Path) -> dict[str, Any]:
    target = load_target(str(path))
    recorder = GraphRecorder()
    run_compiled(target.fn, target.inputs, target.kwargs, recorder.aot_eager)
    return {"target": str(path), **build_copies_report(count_aten_copies(recorder.graphs, target.user_files), None)}


@pytest.fixture(scope="module")
def shared_buffer() -> dict[str, Any]:
    return copies_report(SAMPLES / "shared_buffer_views.py")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The shared-buffer sample under a file name full of HTML and rich markup."""
    path = tmp_path_factory.mktemp("hostile") / "[red]<script>alert('x')<\\script>&.py"
    shutil.copy(SAMPLES / "shared_buffer_views.py", path)
    return copies_report(path)


def table_rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 7 and cells[1]:
            rows[cells[1]] = cells
    return rows


def test_text_table_has_op_group_count_share_and_top_lines(shared_buffer: dict[str, Any]) -> None:
    stream = io.StringIO()
    write_text(shared_buffer, stream, color="never")
    text = stream.getvalue()
    rows = table_rows(text)
    sample = "samples/copies/shared_buffer_views.py"
    first, second = lines_of(SAMPLES / "shared_buffer_views.py", "slice_scatter")
    (copy_back,) = lines_of(SAMPLES / "shared_buffer_views.py", "copy_")
    assert rows["slice_scatter"][2:] == ["view-mutation", "2", "4.0 KiB", "15.4%", f"{sample}:{first} ×1, :{second} ×1"]
    assert rows["copy_"][2:] == ["input-mutation", "1", "2.0 KiB", "7.7%", f"{sample}:{copy_back} ×1"]
    assert "aten: 3 copies in 13 ops (23.1%), writing 6.0 KiB" in text
    assert "view-mutation ×2: in-place op on a view" in text
    assert "[torchair#241]" in text and "[torchair#231]" in text


def test_text_marks_the_change_against_a_baseline(shared_buffer: dict[str, Any]) -> None:
    rewritten = copies_report(SAMPLES / "shared_buffer_views_rewritten.py")
    rewritten["baseline"] = compare(shared_buffer, rewritten)
    stream = io.StringIO()
    write_text(rewritten, stream, color="never")
    rows = {tuple(c.strip() for c in line.split("│")[1:4]): line for line in stream.getvalue().splitlines()
            if line.count("│") == 7}
    assert "▲ +2" in rows[("aten", "clone", "all")]
    assert "▼ -2" in rows[("aten", "slice_scatter", "all")]
    assert "▼ -1" in rows[("aten", "copy_", "all")]
    clone_line = lines_of(SAMPLES / "shared_buffer_views_rewritten.py", "clone")[0]
    scatter_line = lines_of(SAMPLES / "shared_buffer_views.py", "slice_scatter")[0]
    assert "▲ +1" in rows[("aten", "clone", f"samples/copies/shared_buffer_views_rewritten.py:{clone_line}")]
    assert "▼ -1" in rows[("aten", "slice_scatter", f"samples/copies/shared_buffer_views.py:{scatter_line}")]
    assert "▼ -1" in rows[("aten", "all copies", "all")]  # 3 copies became 2: no growth
    assert rewritten["baseline"]["grew"] is False


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += attrs

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_html_is_self_contained_with_bars_per_op_and_line(shared_buffer: dict[str, Any]) -> None:
    html = render_html(shared_buffer)
    page = _Page()
    page.feed(html)
    assert "script" not in page.tags and "link" not in page.tags and "img" not in page.tags
    assert not [value for name, value in page.attributes if name in ("src", "href")]
    assert {value for name, value in page.attributes if name == "xmlns"} == {"http://www.w3.org/2000/svg"}
    marked = marked_copies(SAMPLES / "shared_buffer_views.py")
    # one bar per aten op (slice_scatter, copy_) and one per (line, op)
    assert page.tags.count("svg") == 2 and page.tags.count("rect") == 2 + len(set(marked))
    tooltips = {f"samples/copies/shared_buffer_views.py:{line} {op}: 1" for line, op in marked}
    assert tooltips <= set(page.text)
    for svg in re.findall(r"<svg .*?</svg>", html, flags=re.S):
        ElementTree.fromstring(svg)  # well-formed XML, as inline SVG must be


def test_html_escapes_every_user_string(hostile: dict[str, Any]) -> None:
    html = render_html(hostile)
    page = _Page()
    page.feed(html)
    assert "script" not in page.tags
    for svg in re.findall(r"<svg .*?</svg>", html, flags=re.S):
        ElementTree.fromstring(svg)
    assert "<script>" not in html and "&lt;script&gt;alert(&#x27;x&#x27;)" in html
    assert any("<script>alert('x')" in text for text in page.text)  # shown, as text


def test_baseline_reads_a_trace_report_and_the_minimal_by_line(tmp_path: Path, shared_buffer: dict[str, Any]) -> None:
    trace_report = tmp_path / "trace.json"
    first, second = lines_of(SAMPLES / "shared_buffer_views.py", "slice_scatter")
    (copy_back,) = lines_of(SAMPLES / "shared_buffer_views.py", "copy_")
    known = {"file": "samples/copies/shared_buffer_views.py", "line": first, "op": "slice_scatter", "count": 1}
    minimal = {"aten": {"slice_scatter": 2, "copy_": 1}, "ge": None, "by_line": [known]}
    trace_report.write_text(json.dumps({"version": 1, "copies": minimal}), encoding="utf-8")

    diff = compare(load_baseline(trace_report), shared_buffer)
    assert diff["levels"] == ["aten"] and diff["grew"] is False
    changed = [(ln["line"], ln["op"], ln["change"]) for ln in diff["lines"]]
    assert changed == [(copy_back, "copy_", 1), (second, "slice_scatter", 1)]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--fail-on-increase"], "--fail-on-increase needs --baseline"),
        (["--baseline", "{missing}"], "cannot read baseline"),
        (["--baseline", "{not_copies}"], "is not a copies report"),
    ],
    ids=["fail-without-baseline", "missing-baseline", "not-a-copies-report"],
)
def test_usage_errors_exit_2_before_tracing(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    not_copies = tmp_path / "other.json"
    not_copies.write_text("[1, 2]", encoding="utf-8")
    paths = {"missing": tmp_path / "missing.json", "not_copies": not_copies}
    argv = [a.format(**paths) for a in argv]
    assert main(["copies", str(SAMPLES / "inplace_heavy.py"), *argv]) == 2
    assert message in capsys.readouterr().err


def test_text_shows_file_names_as_they_are(hostile: dict[str, Any]) -> None:
    stream = io.StringIO()
    write_text(hostile, stream, color="never")
    assert "[red]<script>alert('x')" in stream.getvalue()
