"""The engine around the rules: bad files, suppressions, selection, config, discovery, cache,
parallel parsing and exit statuses — all through the real CLI on real files."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from contextlib import chdir
from pathlib import Path

import pytest

import graphlint.checks.collect as collect
from tests.checks.conftest import check_json, found, lint_project, run_cli

CAPTURED = textwrap.dedent("""\
    import torch

    @torch.compile(mode="reduce-overhead")
    def step(x):
        n = x.sum().item()
        return x * torch.ones(4) + n
""")  # GL202@5, GL203@6


def test_unparsable_and_non_utf8_files_become_gl000_and_the_run_goes_on(tmp_path: Path) -> None:
    status, report = lint_project(
        tmp_path,
        {"good.py": CAPTURED, "broken.py": "def f(:\n    pass\n"},
    )
    (tmp_path / "latin1.py").write_bytes(b"x = 1\ns = '\xe9t\xe9'\n")
    with chdir(tmp_path):
        status, report = check_json(".", "--no-cache")
    assert status == 1
    by_file = {(f["path"], f["code"], f["line"]) for f in report["findings"]}
    assert by_file == {
        ("broken.py", "GL000", 1),
        ("latin1.py", "GL000", 2),
        ("good.py", "GL202", 5),
        ("good.py", "GL203", 6),
    }
    errors = {f["path"]: f for f in report["findings"] if f["code"] == "GL000"}
    assert errors["latin1.py"]["severity"] == "error" and "UTF-8" in errors["latin1.py"]["message"]
    assert errors["broken.py"]["slug"] == "parse-error"


def test_suppression_comments(tmp_path: Path) -> None:
    code = textwrap.dedent("""\
        import torch

        @torch.compile(mode="reduce-overhead")
        def step(x):
            a = x.sum().item()  # graphlint: ignore[GL202]
            b = x.sum().item()  # graphlint: ignore
            c = x.sum().item()  # graphlint: ignore[GL2]
            d = x.sum().item()  # graphlint: ignore[GL201]
            e = "# graphlint: ignore"; f = x.sum().item()
            return a + b + c + d + f
    """)
    _, report = lint_project(tmp_path, {"app.py": code})
    assert found(report) == {("GL202", 8), ("GL202", 9)}


def test_select_and_ignore_by_prefix_from_cli_and_config(tmp_path: Path) -> None:
    _, report = lint_project(tmp_path, {"app.py": CAPTURED}, "--select", "GL2", "--ignore", "GL203")
    assert found(report) == {("GL202", 5)}
    _, report = lint_project(tmp_path, {"app.py": CAPTURED}, pyproject='[tool.graphlint]\nignore = ["GL202"]\n')
    assert found(report) == {("GL203", 6)}
    config = '[tool.graphlint]\nselect = ["GL203"]\n'
    assert found(lint_project(tmp_path, {"app.py": CAPTURED}, pyproject=config)[1]) == {("GL203", 6)}
    _, report = lint_project(tmp_path, {"app.py": CAPTURED}, "--select", "GL202", pyproject=config)
    assert found(report) == {("GL202", 5)}  # the command line's select replaces the config's
    _, report = lint_project(
        tmp_path,
        {"app.py": CAPTURED, "tests/test_app.py": CAPTURED},
        pyproject='[tool.graphlint]\nper-file-ignores = {"tests/*" = ["GL2"]}\nexclude = ["build"]\n',
    )
    assert {(f["path"], f["code"]) for f in report["findings"]} == {("app.py", "GL202"), ("app.py", "GL203")}


def test_excluded_and_gitignored_paths_are_skipped(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("generated/\n")
    _, report = lint_project(
        tmp_path,
        {"app.py": CAPTURED, "generated/gen.py": CAPTURED, "legacy/old.py": CAPTURED, ".hidden/h.py": CAPTURED},
        pyproject='[tool.graphlint]\nexclude = ["legacy"]\n',
    )
    assert {f["path"] for f in report["findings"]} == {"app.py"}
    assert report["summary"]["files"] == 1


def test_a_directory_named_directly_is_walked_even_when_gitignored(tmp_path: Path) -> None:
    """`graphlint check .venv/lib/.../site-packages/pkg` lints an installed package."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("vendor/\n")
    lint_project(tmp_path, {"vendor/lib/mod.py": CAPTURED})
    with chdir(tmp_path):
        _, report = check_json("--no-cache", "vendor/lib")
    assert {(f["path"], f["code"]) for f in report["findings"]} == {
        ("vendor/lib/mod.py", "GL202"), ("vendor/lib/mod.py", "GL203"),
    }


def test_exit_statuses(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "clean.py").write_text("import torch\n\ndef f(x):\n    return x + 1\n")
    assert run_cli("check", "--no-cache", str(tmp_path / "clean.py"))[0] == 0
    assert run_cli("check", "--no-cache", str(tmp_path / "missing.py"))[0] == 2
    (tmp_path / "pyproject.toml").write_text("[tool.graphlint]\nselct = ['GL2']\n")
    assert run_cli("check", "--no-cache", str(tmp_path / "clean.py"))[0] == 2
    (tmp_path / "pyproject.toml").write_text("[tool.graphlint]\nselect = 'GL2'\n")
    assert run_cli("check", "--no-cache", str(tmp_path / "clean.py"))[0] == 2
    with pytest.raises(SystemExit) as exc:
        run_cli("check", "--format", "xml")
    assert exc.value.code == 2


def test_cache_reparses_only_changed_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real = collect.extract_facts

    def counting(source: bytes, options):  # type: ignore[no-untyped-def]
        parsed.append(source.decode())
        return real(source, options)

    monkeypatch.setattr(collect, "extract_facts", counting)
    (tmp_path / "pyproject.toml").write_text("")
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(CAPTURED + f"\nVERSION = {i}\n")
    cache = tmp_path / "cache"
    args = ("--cache-dir", str(cache), "-j", "1", str(tmp_path))
    first = check_json(*args)[1]
    assert len(parsed) == 3
    parsed.clear()
    second = check_json(*args)[1]
    assert parsed == [] and second["findings"] == first["findings"]
    (tmp_path / "m1.py").write_text(CAPTURED + "\nVERSION = 'changed'\n")
    check_json(*args)
    assert len(parsed) == 1 and "changed" in parsed[0]
    parsed.clear()
    check_json("--no-cache", "-j", "1", str(tmp_path))
    assert len(parsed) == 3
    assert not any(cache.rglob(".tmp-*")), "cache entries are written by rename"


def test_parallel_and_serial_runs_agree(tmp_path: Path) -> None:
    files = {f"pkg/m{i}.py": CAPTURED + "\n" * i for i in range(collect.SERIAL_BELOW + 6)}
    _, serial = lint_project(tmp_path, files, "-j", "1")
    _, parallel = lint_project(tmp_path, files, "-j", "2")
    assert serial["findings"] == parallel["findings"]
    assert len(serial["findings"]) == 2 * len(files)


def test_check_never_imports_torch(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "app.py").write_text(CAPTURED)
    script = (
        "import sys\nfrom graphlint.cli import main\n"
        f"status = main(['check', '--no-cache', '--format', 'json', {str(tmp_path)!r}])\n"
        "assert 'torch' not in sys.modules, 'graphlint check imported torch'\n"
        "sys.exit(status)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 1, result.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_in_the_tree_never_blocks_a_check_of_one_file(tmp_path: Path) -> None:
    """A FIFO named ``*.py`` next to the file checked: finding the files that import it must not
    open the pipe (opening waits for a writer for ever); last session's ``regions`` hung so."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "app.py").write_text("import torch\n\n\n@torch.compile\ndef step(x):\n    return x.item()\n")
    os.mkfifo(tmp_path / "pipe.py")
    for command in ("check", "regions"):
        done = subprocess.run(
            [sys.executable, "-m", "graphlint", command, "--no-cache", "app.py"],
            cwd=tmp_path, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )
        assert done.returncode in (0, 1), done.stderr
    assert "GL202" in done.stdout or "step" in done.stdout
