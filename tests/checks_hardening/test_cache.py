"""The facts cache never changes a result: concurrent runs, truncated or corrupted entries and
entries of another graphlint version all give exactly what ``--no-cache`` gives. It holds JSON
only (a cache must never be a way to run code) and leaves no half-written files."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from graphlint import __version__
from graphlint.checks import cache as facts_cache
from graphlint.checks import catalog
from graphlint.checks.facts import ExtractOptions
from tests.checks_hardening.cli import GRAPHLINT, CheckRun, assert_same_findings, graphlint_check, write_tree

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples" / "static"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The static samples (one file per rule, and a cross-file package) as a project of its own."""
    root = tmp_path / "project"
    write_tree(root, {str(p.relative_to(SAMPLES)): p.read_bytes() for p in SAMPLES.rglob("*.py")})
    (root / "pyproject.toml").write_text("[tool.graphlint]\n", encoding="utf-8")
    return root


@pytest.fixture
def uncached(project: Path) -> CheckRun:
    run = graphlint_check("--no-cache", ".", cwd=project)
    assert run.returncode == 1 and len(run.findings()) >= 10  # the samples have findings to lose
    return run


def cache_entries(cache_dir: Path) -> list[Path]:
    return sorted(p for p in cache_dir.rglob("*") if p.is_file() and p.suffix == ".json")


def test_cache_holds_json_only_and_no_temporary_files(project, uncached, tmp_path):
    cache_dir = tmp_path / "cache"
    cold = graphlint_check("--cache-dir", cache_dir, ".", cwd=project)
    warm = graphlint_check("--cache-dir", cache_dir, ".", cwd=project)
    assert_same_findings([uncached, cold, warm])
    entries = cache_entries(cache_dir)
    # The rule table, the solved graph and its key.
    tables = sorted(e.name for e in entries if e.parent.name.startswith("facts-"))
    assert tables[2] == f"{catalog.TABLE_NAME}.json" and tables[0] == tables[1].replace(".json", "-key.json")
    assert len(entries) - len(tables) == len(list(SAMPLES.rglob("*.py")))
    for entry in entries:
        json.loads(entry.read_bytes())  # data, never pickle
    leftovers = {p.name for p in cache_dir.rglob("*") if p.is_file()} - {e.name for e in entries}
    assert leftovers <= {".gitignore", "CACHEDIR.TAG"}


def test_two_processes_on_the_same_tree_at_once(project, uncached, tmp_path):
    cache_dir = tmp_path / "cache"
    command = [str(GRAPHLINT), "check", "--format", "json", "--cache-dir", str(cache_dir), "-j", "2", "."]
    racers = [subprocess.Popen(command, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for _ in range(3)]
    runs = []
    for racer in racers:
        out, err = racer.communicate(timeout=120)
        assert "Traceback" not in err, err
        runs.append(CheckRun(racer.returncode, out, err))
    warm = graphlint_check("--cache-dir", cache_dir, ".", cwd=project)
    assert_same_findings([uncached, *runs, warm])
    assert not [p for p in cache_dir.rglob(".tmp-*")]


CORRUPTIONS = {
    "truncated": lambda data: data[: len(data) // 2],
    "empty": lambda data: b"",
    "binary_garbage": lambda data: bytes(range(256)) * 4,
    "not_utf8": lambda data: data.replace(b"{", b"\xff{", 1),
    "null": lambda data: b"null",
    "list": lambda data: b"[]",
    "empty_object": lambda data: b"{}",
    "wrong_types": lambda data: json.dumps(
        {key: "x" for key in json.loads(data)}
    ).encode(),
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_corrupted_entries_are_parsed_again(project, uncached, tmp_path, corruption):
    cache_dir = tmp_path / "cache"
    graphlint_check("--cache-dir", cache_dir, ".", cwd=project)
    for entry in cache_entries(cache_dir):
        entry.write_bytes(CORRUPTIONS[corruption](entry.read_bytes()))
    run = graphlint_check("--cache-dir", cache_dir, ".", cwd=project)
    assert_same_findings([uncached, run])


def test_entries_of_another_version_are_not_used(project, uncached, tmp_path, monkeypatch):
    """Entries written by another graphlint version (here: entries that say "no findings") sit
    under another fingerprint and are ignored; the same entries under this version's fingerprint
    would be believed, which is what makes this test able to fail."""
    cache_dir = tmp_path / "cache"
    graphlint_check("--cache-dir", cache_dir, ".", cwd=project)
    [current] = [d for d in cache_dir.iterdir() if d.is_dir()]
    monkeypatch.setattr(facts_cache, "__version__", __version__ + ".other")
    older = cache_dir / f"facts-{facts_cache.fingerprint(ExtractOptions())}"
    assert older != current
    current.rename(older)
    for entry in cache_entries(older):
        facts = json.loads(entry.read_bytes())
        entry.write_text(json.dumps({**facts, "candidates": []}), encoding="utf-8")
    run = graphlint_check("--cache-dir", cache_dir, ".", cwd=project)
    assert_same_findings([uncached, run])

    shutil.rmtree(current)  # the control: the same entries are believed under this fingerprint
    older.rename(current)
    poisoned = graphlint_check("--cache-dir", cache_dir, ".", cwd=project)
    assert len(poisoned.findings()) < len(uncached.findings())


def test_unwritable_cache_directory_costs_nothing(project, uncached, tmp_path):
    cache_dir = tmp_path / "cache"
    cache_dir.write_text("a file where the cache directory should be", encoding="utf-8")
    run = graphlint_check("--cache-dir", cache_dir, ".", cwd=project)
    assert_same_findings([uncached, run])
