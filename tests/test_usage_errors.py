"""Typos are usage errors: unknown codes, unknown config keys and paths that do not exist stop
the command with one line on stderr and exit status 2, before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.cli import main

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "samples" / "trace" / "str_on_symint.py"
CAPTURE_SYNC = "import torch\n\n@torch.compile(mode='reduce-overhead')\ndef f(x):\n    return x.item()\n"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text(CAPTURE_SYNC)
    return tmp_path


@pytest.mark.parametrize(
    "argv", [["--select", "GL999"], ["--ignore", "XYZ"], ["--select", "GL2,GT005"], ["--ignore", "GL1", "--ignore", "gl9"]]
)
def test_unknown_codes_on_the_command_line(argv: list[str], project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _run(capsys, "check", "--no-cache", *argv, str(project / "model.py"))
    assert (status, out) == (2, "")
    (line,) = err.splitlines()
    assert line.startswith("graphlint check: --") and "names no code graphlint check prints" in line


@pytest.mark.parametrize(
    "table",
    ['select = ["GL999"]', 'ignore = ["GL2", "XYZ"]', 'per-file-ignores = {"tests/*" = ["GL20"], "x.py" = ["GB1"]}', 'selct = ["GL2"]', 'preview = "yes"'],
    ids=["select", "ignore", "per-file-ignores", "unknown-key", "preview-not-a-bool"],
)
def test_unknown_codes_and_keys_in_the_config(table: str, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "pyproject.toml").write_text(f"[tool.graphlint]\n{table}\n")
    status, out, err = _run(capsys, "check", "--no-cache", str(project / "model.py"))
    assert (status, out) == (2, "")
    assert len(err.splitlines()) == 1 and "[tool.graphlint]" in err


def test_known_codes_and_prefixes_still_select(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "pyproject.toml").write_text('[tool.graphlint]\nper-file-ignores = {"tests/*" = ["GL2"]}\n')
    assert _run(capsys, "check", "--no-cache", "--select", "gl2,GL000", str(project / "model.py"))[0] == 1
    assert _run(capsys, "check", "--no-cache", "--ignore", "GL202", str(project / "model.py"))[0] == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["trace", str(SAMPLE), "--torchair", "{missing}"],
        ["trace", str(SAMPLE), "--baseline", "{missing}"],
        ["env", "--torchair", "{missing}"],
        ["copies", str(SAMPLE), "--torchair", "{empty}"],
        ["copies", str(SAMPLE), "--baseline", "{missing}"],
        ["ops", "--torchair", "{missing}"],
    ],
    ids=["trace-torchair", "trace-baseline", "env-torchair", "copies-torchair-no-torchair", "copies-baseline", "ops-torchair"],
)
def test_paths_that_do_not_exist(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [a.format(missing=tmp_path / "nonexistent", empty=tmp_path) for a in argv]
    status, out, err = _run(capsys, *argv)
    assert (status, out) == (2, "")
    (line,) = err.splitlines()
    assert line.startswith(f"graphlint {argv[0]}: ") and str(tmp_path) in line


def test_the_torchair_variable_is_checked_like_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GRAPHLINT_TORCHAIR", str(tmp_path / "nonexistent"))
    status, out, err = _run(capsys, "env")
    assert (status, out) == (2, "") and err.startswith("graphlint env: GRAPHLINT_TORCHAIR: ")


@pytest.mark.parametrize("where", ["cli", "config"])
def test_an_extra_path_that_is_not_a_folder(where: str, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["check", "--no-cache", str(project / "model.py")]
    if where == "cli":
        argv[2:2] = ["--extra-path", str(project / "no-such-framework")]
    else:
        (project / "pyproject.toml").write_text('[tool.graphlint]\nextra-paths = ["no-such-framework"]\n')
    status, out, err = _run(capsys, *argv)
    assert (status, out) == (2, "")
    (line,) = err.splitlines()
    assert line.startswith("graphlint check: extra path is not a directory:") and "no-such-framework" in line
