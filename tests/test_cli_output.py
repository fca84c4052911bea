"""Output for people and for CI: colour as asked, the stage notes whole when stdout is a log,
progress on stderr, one option vocabulary with the defaults in --help, and check's --fix count,
--lang and -o."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from graphlint.cli import build_parser, main

REPO = Path(__file__).resolve().parents[1]
BREAK_SAMPLE = REPO / "samples" / "trace" / "str_on_symint.py"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
CAPTURED_COPY = """import torch


@torch.compile(mode="reduce-overhead")
def step(x):
    pos = torch.arange(x.shape[1]).to(x.device)
    return x + pos
"""


def _graphlint(*argv: str, env: dict[str, str] | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """graphlint as CI runs it: stdout and stderr are pipes, not terminals."""
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"PYTHONPATH": str(REPO)} | (env or {})
    return subprocess.run([sys.executable, "-m", "graphlint", *argv], capture_output=True, text=True, env=environ, cwd=cwd)


@pytest.fixture(scope="module")
def trace_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dump")


@pytest.fixture(scope="module")
def piped_trace(trace_dump: Path) -> subprocess.CompletedProcess[str]:
    return _graphlint("trace", str(BREAK_SAMPLE), "--stages", "eager,dynamo", "--dump", str(trace_dump))


@pytest.fixture(scope="module")
def break_finding(piped_trace: subprocess.CompletedProcess[str], trace_dump: Path) -> dict:
    """The break as the same run's JSON report has it: its code and message are torch's own,
    which differ between releases (GB0059 on 2.13, GB6053 on 2.14)."""
    report = json.loads((trace_dump / "report.json").read_text(encoding="utf-8"))
    (finding,) = [f for f in report["findings"] if f["kind"] == "graph-break"]
    return finding


def test_a_piped_trace_puts_the_notes_whole_below_the_table(
    piped_trace: subprocess.CompletedProcess[str], break_finding: dict
) -> None:
    out = piped_trace.stdout
    assert piped_trace.returncode == 1
    header = next(line for line in out.splitlines() if "stage" in line and "status" in line)
    assert "note" not in header
    flat = " ".join(out.split())
    message = " ".join(break_finding["message"].split())
    assert len(message) > 80 and f"dynamo failed: {message}" in flat  # longer than a line, yet whole
    assert not ANSI.search(out)  # not a terminal: no colour


def test_a_piped_trace_prints_each_findings_place_whole(
    piped_trace: subprocess.CompletedProcess[str], break_finding: dict
) -> None:
    # A long path in an 80-column log: the panel's title is cut, so the place must not be there.
    place = f"{BREAK_SAMPLE.relative_to(REPO)}:"
    lines = [line.strip("│ ") for line in piped_trace.stdout.splitlines()]
    title = next(i for i, line in enumerate(lines) if f"{break_finding['code']} graph-break" in line)
    where = lines[title + 1]
    assert where.startswith(place), where
    line = int(where.removeprefix(place))
    assert 'str(batch)' in BREAK_SAMPLE.read_text().splitlines()[line - 1]


def test_progress_goes_to_stderr_a_line_per_step(piped_trace: subprocess.CompletedProcess[str]) -> None:
    lines = piped_trace.stderr.splitlines()
    assert lines[0] == "running the eager stage…"
    assert "running the dynamo stage…" in lines
    assert any(line.strip().startswith("failed dynamo") for line in lines)


def test_color_always_never_and_no_color(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text(CAPTURED_COPY)
    always = _graphlint("check", "--no-cache", "--color", "always", "model.py", cwd=tmp_path)
    assert always.returncode == 1 and ANSI.search(always.stdout)
    assert ANSI.search(_graphlint("check", "--no-cache", "--color", "always", "model.py", env={"NO_COLOR": "1"}, cwd=tmp_path).stdout)
    never = _graphlint("check", "--no-cache", "--color", "never", "model.py", cwd=tmp_path)
    seconds = re.compile(r"in [0-9.]+s")
    assert not ANSI.search(never.stdout)
    assert seconds.sub("", ANSI.sub("", always.stdout)) == seconds.sub("", never.stdout)
    from graphlint.options import wants_color

    class Terminal:
        def isatty(self) -> bool:
            return True

    saved = os.environ.pop("NO_COLOR", None)
    try:
        assert wants_color("auto", Terminal())  # type: ignore[arg-type]
        os.environ["NO_COLOR"] = "1"
        assert not wants_color("auto", Terminal())  # type: ignore[arg-type]
    finally:
        os.environ.pop("NO_COLOR", None)
        if saved is not None:
            os.environ["NO_COLOR"] = saved


def test_copies_reports_progress_on_stderr() -> None:
    run = _graphlint("copies", "samples/copies/shared_buffer_views.py", "--format", "json")
    assert run.returncode == 0, run.stderr
    assert [line for line in run.stderr.splitlines() if line.startswith("running the ")] == [
        f"running the {stage} stage…" for stage in ("eager", "dynamo", "aot", "torchair")
    ]


def test_fix_counts_what_went_away_and_no_zero_offers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    model = tmp_path / "model.py"
    model.write_text(CAPTURED_COPY)
    assert main(["check", "--no-cache", str(model)]) == 1
    out = capsys.readouterr().out
    assert "2 finding(s)" in out and "1 fixable with --fix (preview: --diff)" in out and "0 more" not in out
    assert main(["check", "--no-cache", "--fix", str(model)]) == 0
    assert "graphlint: fixed 2 finding(s) in 1 file(s)" in capsys.readouterr().err  # one fix settles GL201 and GL203
    assert "torch.arange(x.shape[1], device=x.device)" in model.read_text()


def test_check_lang_and_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text(CAPTURED_COPY)
    assert main(["check", "--no-cache", "--lang", "zh", str(tmp_path / "model.py")]) == 1
    assert "说明：捕获区域内 host↔device 拷贝" in capsys.readouterr().out
    report = tmp_path / "out.json"
    assert main(["check", "--no-cache", "--format", "json", "-o", str(report), str(tmp_path / "model.py")]) == 1
    assert capsys.readouterr().out == "" and '"GL201"' in report.read_text()


def _help(*command: str) -> str:
    parser = build_parser()
    for action in parser._subparsers._group_actions:  # type: ignore[union-attr]
        sub = action.choices[command[0]]
        for name in command[1:]:
            sub = next(a for a in sub._subparsers._group_actions).choices[name]  # type: ignore[union-attr]
        return " ".join(sub.format_help().split())
    raise AssertionError(command)


@pytest.mark.parametrize("command", [("check",), ("trace",), ("copies",), ("ops",), ("env",), ("explain",), ("torchair", "fetch")])
def test_help_names_defaults_and_the_environment(command: tuple[str, ...]) -> None:
    text = _help(*command)
    assert "GRAPHLINT_TORCHAIR" in text and "GRAPHLINT_HOME" in text and "~/.cache/graphlint" in text
    for option in re.findall(r"(--[a-z-]+) \{[^}]+\}", text):  # every option with choices names its default
        assert re.search(re.escape(option) + r" \{[^}]+\} .*?default", text), option


def test_one_vocabulary_with_the_old_spellings(capsys: pytest.CaptureFixture[str], torch_npu_wheel: Path, tmp_path: Path) -> None:
    for command in ("trace", "copies", "ops"):
        assert "TARGET" in _help(command) and "-o FILE, --output FILE" in _help(command)
    assert "--dump DIR" in _help("trace")
    table, text = tmp_path / "table.txt", tmp_path / "text.txt"
    assert main(["ops", "--torchair", str(torch_npu_wheel), "--format", "table", "-o", str(table)]) == 0
    assert main(["ops", "--torchair", str(torch_npu_wheel), "--format", "text", "--output", str(text)]) == 0
    assert table.read_text() == text.read_text() and text.read_text().startswith("op ")
