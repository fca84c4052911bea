"""Reports are safe to open: strings from user code (exception messages, file names) are text in
report.html and in the terminal report, never markup; --dump writes only inside its folder."""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from rich.console import Console

from graphlint.tracer.report.text import print_report
from graphlint.tracer.stages.base import StageContext, TraceOptions, TraceTarget
from tests.tracer.conftest import run_cli
from tests.tracer_hardening.conftest import FAILURES, FailureTrace, ProcessWatch, TraceRun, marked_environment, trace
from tests.tracer_hardening.test_failure_samples import run_of

PAYLOAD = "<script>alert('graphlint')</script><img src=x onerror=alert(1)> [/bold] [link=file:///etc]"
# HTML, and a byte that is not UTF-8 (a Latin-1 file system: Python decodes it to "\udce9")
HOSTILE_FILE_NAME = "<img src=x onerror=alert(2)>donn" + os.fsdecode(b"\xe9") + "es.py"
SPELLED_FILE_NAME = "<img src=x onerror=alert(2)>donn\\udce9es.py"


@pytest.fixture(scope="module")
def hostile_name_run(tmp_path_factory: pytest.TempPathFactory) -> TraceRun:
    """script_in_message.py copied under a file name that is HTML and not UTF-8."""
    folder = tmp_path_factory.mktemp("hostile-name")
    target = folder / "target" / HOSTILE_FILE_NAME
    target.parent.mkdir()
    shutil.copy(FAILURES / "script_in_message.py", target)
    return trace(target, folder / "dump", "--stages", "eager")


def assert_no_markup_from_user_code(html: str) -> None:
    lowered = html.lower()
    assert "<script" not in lowered and "<img" not in lowered  # the page has no script of its own either
    assert "&lt;script&gt;alert(" in html and "&lt;img src=x onerror=alert(" in html


def test_exception_message_is_escaped_in_report_html_and_kept_verbatim_in_json(failure_trace: FailureTrace) -> None:
    run = run_of(failure_trace, "script_in_message")
    assert PAYLOAD in run.report["findings"][0]["message"]
    html = (run.dump / "report.html").read_text(encoding="utf-8")
    assert_no_markup_from_user_code(html)


def test_file_name_made_of_html_and_latin1_is_spelled_out_and_escaped(hostile_name_run: TraceRun) -> None:
    assert hostile_name_run.status == 1 and hostile_name_run.left == {}
    assert hostile_name_run.report["target"].endswith(SPELLED_FILE_NAME)
    assert any(f["file"] and f["file"].endswith(SPELLED_FILE_NAME) for f in hostile_name_run.report["findings"])
    html = (hostile_name_run.dump / "report.html").read_text(encoding="utf-8")
    assert_no_markup_from_user_code(html)
    assert "&lt;img src=x onerror=alert(2)&gt;donn\\udce9es.py" in html


def test_terminal_report_prints_rich_markup_from_user_code_as_text(failure_trace: FailureTrace) -> None:
    run = run_of(failure_trace, "script_in_message")
    out = io.StringIO()
    print_report(run.report, Console(file=out, width=400, color_system=None))
    assert "[/bold] [link=file:///etc]" in out.getvalue()


def test_dump_keeps_names_from_user_code_inside_its_folder(failure_trace: FailureTrace) -> None:
    run = run_of(failure_trace, "dump_path_names")
    assert run.status == 0
    written = [p for p in run.dump.parent.rglob("*") if p.is_file()]
    assert written and all(run.dump in p.parents for p in written)
    decompiled = [p for p in written if "escaped" in p.name]
    assert decompiled, f"depyf's dump of the renamed forward is missing: {written}"
    assert all(".." not in p.relative_to(run.dump).parts for p in decompiled)


@settings(max_examples=200, deadline=None)
@example(name="a" * 300)  # longer than a file name may be
@given(name=st.one_of(st.text(max_size=600), st.text(alphabet="ab./_", max_size=600)))
def test_any_name_from_user_code_is_dumped_inside_the_dump_folder(name: str) -> None:
    """Function, graph and GE names reach ``StageContext.dump`` from user code, inside the
    callers' fixed patterns: whatever they are (``..``, absolute, NUL, 600 characters), the file
    is written, inside ``--dump`` (long names were an OSError that failed the stage)."""
    with tempfile.TemporaryDirectory() as tmp:
        dump_dir = Path(tmp) / "dump"
        ctx = StageContext(TraceTarget(print, [()], [{}], "t"), TraceOptions(dump_dir=dump_dir))
        written = ctx.dump(f"decompiled/{name}_entry_0.py", "x = 1\n")
        assert written is not None and dump_dir in written.parents
        assert written.read_text(encoding="utf-8") == "x = 1\n"
        assert all(p == dump_dir or dump_dir in p.parents for p in Path(tmp).rglob("*"))


def test_dump_onto_an_existing_file_is_refused_before_anything_runs(tmp_path: Path) -> None:
    taken = tmp_path / "report.json"
    taken.write_text("keep me", encoding="utf-8")
    with marked_environment() as marker, ProcessWatch(marker) as watch:
        status, out, err = run_cli("trace", str(FAILURES / "script_in_message.py"), "--dump", str(taken))
    assert status == 2 and out == "" and f"cannot write --dump {taken}" in err
    assert taken.read_text(encoding="utf-8") == "keep me"
    assert watch.seen == {}  # refused before a worker started


def test_bytes_that_are_not_utf8_in_a_message_are_spelled_out_and_every_writer_can_encode_them(
    failure_trace: FailureTrace,
) -> None:
    run = run_of(failure_trace, "undecodable_message")
    (error,) = run.report["findings"]
    assert "no such file: donn\\udce9es.bin" in error["message"]
    json.dumps(run.report, ensure_ascii=False).encode("utf-8")  # no lone surrogate left anywhere
    for written in ("report.json", "report.html"):
        assert "donn\\udce9es.bin" in (run.dump / written).read_bytes().decode("utf-8").replace("\\\\", "\\")
