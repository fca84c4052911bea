"""Real corpora: the standard library and the installed ``transformers`` (pinned by the ``test``
extra). Zero internal errors, never a traceback; a file is ``GL000`` exactly when Python itself
cannot parse it, or (said as such) when it is valid Python that libcst cannot read.

Every file of each, about 4,650 files and 2.1 M lines, linked whole by the value flow. The installed
``torch`` (2,285 files, 1.2 M lines) is left to ``benchmarks/check_throughput.py --corpora``,
which lints all three and counts internal errors the same way: since the value flow, a cold run
costs about 6 CPU-minutes per corpus of this size, and the three together took half of what CI
allows the whole suite on two cores. ``benchmarks/README.md`` has the figures.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import shutil
import sysconfig
import warnings
from pathlib import Path

import pytest

from graphlint.checks.extract import LIBCST_CANNOT_PARSE
from tests.checks_hardening.cli import graphlint_check

pytestmark = pytest.mark.corpus

def corpus_files(name: str) -> tuple[Path, list[Path]]:
    """The corpus's root and its ``.py`` files, sorted (the standard library without site-packages)."""
    if name == "stdlib":
        root = Path(sysconfig.get_paths()["stdlib"])
        skipped = {"site-packages", "dist-packages"}
    else:
        spec = importlib.util.find_spec(name)  # found, not imported
        assert spec is not None and spec.submodule_search_locations, f"{name} is not installed"
        root = Path(spec.submodule_search_locations[0])
        skipped = set()
    files = []
    for current, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skipped and d != "__pycache__")
        files.extend(Path(current) / f for f in sorted(filenames) if f.endswith(".py"))
    return root, files


def python_refuses(path: Path) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    return False


# pytest-timeout's 600 s would stop a loaded machine's run before the lint's own 1,800 s limit
# below, which is what this test means to bound.
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name", ["stdlib", "transformers"])
def test_corpus_lints_without_internal_errors(name, tmp_path):
    root, files = corpus_files(name)
    refused = {f.relative_to(root).as_posix() for f in files if python_refuses(f)}
    # A copy, so that the corpus is the whole project: the standard library's folder also holds
    # site-packages, which is not part of it.
    copy = tmp_path / name
    for file in files:
        target = copy / file.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, target)
    (copy / "pyproject.toml").write_text("[tool.graphlint]\n", encoding="utf-8")

    run = graphlint_check("--no-cache", "-j", "2", ".", cwd=copy, timeout=1800)

    assert run.returncode in (0, 1), run.stderr
    assert run.report["summary"]["files"] == len(files)
    parse_errors = {f["path"]: f["message"] for f in run.findings("GL000")}
    assert not [m for m in parse_errors.values() if m.startswith("internal error")]
    # GL000 exactly where Python refuses the file, and where libcst refuses valid Python (rare
    # syntax such as a parenthesized annotated target, ``(x): int = 1``), said as such.
    libcst_only = {path for path, message in parse_errors.items() if message.startswith(LIBCST_CANNOT_PARSE)}
    assert set(parse_errors) - libcst_only == refused
    assert not libcst_only & refused
