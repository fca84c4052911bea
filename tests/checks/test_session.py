"""``CheckSession``, the interface ``graphlint server`` checks through: the same findings as
``graphlint check`` on real files, unsaved text standing in for a file, files changed on disk
seen without being told, unsaved text never written to the facts cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.checks.engine import CheckOptions, run_check
from graphlint.checks.findings import Finding
from graphlint.checks.session import CheckSession
from tests.checks_hardening.cli import write_tree

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "static"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    write_tree(root, {str(p.relative_to(SAMPLES)): p.read_bytes() for p in SAMPLES.rglob("*.py")})
    (root / "pyproject.toml").write_text("[tool.graphlint]\n", encoding="utf-8")
    return root


def summary(findings: list[Finding]) -> list[tuple[str, int, int, str, str, tuple[str, ...] | None]]:
    return [(f.file.resolve().as_posix(), f.line, f.column, f.code, f.severity, f.region.chain if f.region else None)
            for f in findings]


def test_a_session_finds_what_graphlint_check_finds(project: Path, tmp_path: Path) -> None:
    files = sorted(project.rglob("*.py"))
    session = CheckSession(project, cache_directory=tmp_path / "cache")
    expected = run_check(CheckOptions(paths=[project], use_cache=False)).findings
    assert len(expected) >= 20
    assert summary(session.check(files).findings) == summary(expected)
    assert summary(session.check(files).findings) == summary(expected)  # and again, from memory
    one = project / "crossfile" / "helpers.py"
    assert summary(session.check([one]).findings) == [s for s in summary(expected) if s[0] == one.as_posix()]


def test_unsaved_text_stands_in_for_the_file_and_is_not_cached(project: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    session = CheckSession(project, cache_directory=cache)
    helpers, run = project / "crossfile" / "helpers.py", project / "crossfile" / "run.py"
    assert {f.severity for f in session.check([helpers]).findings} == {"error"}
    entries = set(cache.rglob("*.json"))

    eager = run.read_text(encoding="utf-8").replace("torch.compile(Decoder(hidden, depth), backend=backend, dynamic=False)",
                                                    "Decoder(hidden, depth)")
    assert session.check([helpers], {run: eager}).findings == []
    assert set(cache.rglob("*.json")) == entries
    assert len(session.check([helpers]).findings) == 3  # the file on disk again


def test_files_changed_on_disk_are_seen_and_new_files_after_a_refresh(project: Path, tmp_path: Path) -> None:
    session = CheckSession(project, cache_directory=tmp_path / "cache")
    helpers = project / "crossfile" / "helpers.py"
    before = session.check([helpers]).findings
    helpers.write_text(helpers.read_text(encoding="utf-8").replace("int(mask.sum().item())", "mask.sum()"),
                       encoding="utf-8")
    after = session.check([helpers]).findings
    assert {f.code for f in before} - {f.code for f in after} == {"GL202"}

    runner = project / "crossfile" / "also_run.py"
    runner.write_text("import torch\nfrom .helpers import build_positions\n\nfast = torch.compile(build_positions, "
                      "mode='reduce-overhead')\n", encoding="utf-8")
    assert session.check([helpers]).findings == after  # not yet found: the server refreshes on save
    assert {f.region.entry_label for f in after if f.region} == {"crossfile/run.py:14"}
    session.refresh()
    regions = {f.region.entry_label for f in session.check([helpers]).findings if f.region}
    assert regions == {"crossfile/also_run.py:4"}  # the shorter chain, from the new file


def test_a_target_outside_the_root_or_excluded_is_not_checked(project: Path, tmp_path: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.graphlint]\nexclude = ["crossfile"]\n', encoding="utf-8")
    session = CheckSession(project, cache_directory=tmp_path / "cache")
    outside = tmp_path / "elsewhere.py"
    outside.write_text((SAMPLES / "sync_in_capture.py").read_text(encoding="utf-8"), encoding="utf-8")
    result = session.check([project / "crossfile" / "helpers.py", outside, project / "sync_in_capture.py"])
    assert result.files == 1 and {f.path for f in result.findings} == {"sync_in_capture.py"}
