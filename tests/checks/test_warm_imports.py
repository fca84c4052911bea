"""A run served from the facts cache imports only what judging cached facts needs: not libcst,
not the walk, none of the rule modules but those of rules that judge the linked project (the
others only serve the walk), not rich for a JSON report, not a process pool, never torch. Measured on the real console script, by the names in its
``sys.modules`` when it exits; the cold run beside it is the control that shows the same listing
does name libcst and the rules when a file has to be parsed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from graphlint.checks.rules import all_rules
from graphlint.checks.rules.base import ProjectRule
from tests.checks_hardening.cli import GRAPHLINT, write_tree

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples" / "static"

# Imported only to parse a file, or to run a pool; none is needed to judge facts.
PARSING_ONLY = ("libcst", "graphlint.checks.extract", "graphlint.checks.positions", "graphlint.checks.syntax",
                "multiprocessing", "concurrent.futures")
NEVER = ("torch", "rich")
# The rule modules a warm run may import: those of rules that judge the linked project itself.
JUDGING = {"graphlint.checks.rules", "graphlint.checks.rules.base",
           *(type(rule).__module__ for rule in all_rules() if isinstance(rule, ProjectRule))}


# Runs the console script as itself, and writes the names in ``sys.modules`` when it exits.
# (``-X importtime`` would miss what ``importlib.import_module`` imports: the rule modules.)
_WITH_MODULES_AT_EXIT = """
import atexit, json, runpy, sys
atexit.register(lambda: sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n"))
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def imported_modules(*args: str | Path, cwd: Path) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """Every module ``graphlint check ARGS`` has imported when it exits."""
    result = subprocess.run([sys.executable, "-c", _WITH_MODULES_AT_EXIT, str(GRAPHLINT), "check", *map(str, args)],
                            cwd=cwd, capture_output=True, text=True, timeout=120)
    assert result.returncode in (0, 1), result.stderr[-3000:]
    listing = re.search(r"^MODULES (.*)$", result.stderr, re.MULTILINE)
    assert listing is not None, result.stderr[-3000:]
    modules = set(json.loads(listing.group(1)))
    assert "graphlint.checks.engine" in modules
    return modules, result


def named(modules: set[str], prefixes: tuple[str, ...]) -> set[str]:
    return {m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes)}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The static samples (one file per rule, a cross-file package): findings of every rule, so
    that judging them needs every rule's code, slug, severity and regions."""
    root = tmp_path / "project"
    write_tree(root, {str(p.relative_to(SAMPLES)): p.read_bytes() for p in SAMPLES.rglob("*.py")})
    (root / "pyproject.toml").write_text("[tool.graphlint]\n", encoding="utf-8")
    return root


def test_a_warm_run_imports_neither_libcst_nor_the_rules(project: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cold_modules, cold = imported_modules("--format", "json", "--cache-dir", cache, ".", cwd=project)
    warm_modules, warm = imported_modules("--format", "json", "--cache-dir", cache, ".", cwd=project)

    assert {"libcst", "graphlint.checks.extract", "graphlint.checks.rules.sync_in_capture"} <= cold_modules
    assert named(warm_modules, PARSING_ONLY) == set()
    assert named(warm_modules, ("graphlint.checks.rules",)) <= JUDGING
    assert named(warm_modules, NEVER) == set()
    assert named(cold_modules, NEVER) == set()
    assert warm.returncode == cold.returncode == 1
    findings = json.loads(warm.stdout)["findings"]
    assert findings == json.loads(cold.stdout)["findings"]
    assert len({f["code"] for f in findings}) >= 10 and {f["severity"] for f in findings} == {"error", "warning"}


def test_one_changed_file_parses_that_file_only_and_still_links_the_rest(project: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    imported_modules("--format", "json", "--cache-dir", cache, ".", cwd=project)
    entries = set(cache.rglob("*.json"))
    helpers = project / "crossfile" / "helpers.py"
    helpers.write_text(helpers.read_text(encoding="utf-8") + "\n\ndef more(x):\n    return x.cpu()\n", encoding="utf-8")

    modules, run = imported_modules("--format", "json", "--cache-dir", cache, ".", cwd=project)

    assert "libcst" in modules  # the changed file is parsed, and only that file:
    assert len(set(cache.rglob("*.json")) - entries) == 1
    paths = {(f["path"], f["line"], f["code"]) for f in json.loads(run.stdout)["findings"]}
    assert ("crossfile/helpers.py", 11, "GL201") in paths  # reached from run.py, through layers.py
    assert ("crossfile/helpers.py", 19, "GL201") not in paths  # more() is reached by no region


def test_a_warm_text_report_imports_rich_but_not_libcst(project: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    imported_modules("--cache-dir", cache, ".", cwd=project)
    modules, run = imported_modules("--cache-dir", cache, ".", cwd=project)
    assert "rich.console" in modules and "GL202" in run.stdout
    assert named(modules, PARSING_ONLY) == set()
    assert named(modules, ("graphlint.checks.rules",)) <= JUDGING
