"""`graphlint torchair fetch`: which torch_npu pairs with a torch, asked of the real index."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from graphlint.cli import main
from graphlint.tracer.stages.base import StageContext, TraceOptions
from graphlint.tracer.stages.torchair import TorchairStage
from graphlint.tracer.torchair import locate
from graphlint.tracer.torchair.fetch import PLATFORMS, pairing_specifiers


def _pip_resolves(requirement: str, tmp_path: Path) -> str | None:
    """What pip itself picks for ``torch-npu<requirement>`` (metadata only, nothing downloaded
    or installed), with the same tags as the fetch; None when nothing matches."""
    report = tmp_path / "report.json"
    completed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed",
         "--only-binary=:all:", "--python-version", "3.11", *(f"--platform={p}" for p in PLATFORMS),
         "--target", str(tmp_path / "never"), "--quiet", "--report", str(report), f"torch-npu{requirement}"],
        capture_output=True, text=True,
    )
    if completed.returncode != 0:
        assert "Could not find a version that satisfies" in completed.stderr, completed.stderr
        return None
    (installed,) = json.loads(report.read_text())["install"]
    return installed["metadata"]["version"]


@pytest.mark.parametrize(
    ("torch_version", "torch_npu"),
    [("2.14.1", "2.14.0"), ("2.6.0", "2.6.0.post5"), ("2.7.1+cpu", "2.7.1.post11"), ("2.13.0+cu128", "2.13.0")],
)
def test_the_newest_release_of_the_line_pairs(torch_version: str, torch_npu: str, tmp_path: Path) -> None:
    same_release, same_line = pairing_specifiers(torch_version)
    picked = _pip_resolves(same_release, tmp_path) or _pip_resolves(same_line, tmp_path)
    assert picked == torch_npu


def test_specifiers_admit_post_releases_only_of_their_line() -> None:
    from packaging.specifiers import SpecifierSet

    same_release, same_line = pairing_specifiers("2.9.0+cpu")
    offered = ["2.10.0", "2.9.1", "2.9.0.post9", "2.9.0", "2.8.0.post5", "2.9.0rc1"]
    assert list(SpecifierSet(same_release).filter(offered)) == ["2.9.0.post9", "2.9.0"]
    assert list(SpecifierSet(same_line).filter(offered)) == ["2.9.1", "2.9.0.post9", "2.9.0"]


def test_a_cached_wheel_of_the_line_is_used_without_a_download(
    torch_npu_wheel: Path,
    torch_npu_wheel_version: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "wheels").mkdir()
    shutil.copy2(torch_npu_wheel, tmp_path / "wheels" / torch_npu_wheel.name)
    monkeypatch.setenv("GRAPHLINT_HOME", str(tmp_path))
    # A patch release of the wheel's line that has no torch_npu (e.g. torch 2.13.99 for the
    # 2.13.0 wheel): pip is asked, then the cached wheel of the line serves.
    major, minor = Version(torch_npu_wheel_version).release[:2]
    assert main(["torchair", "fetch", "--torch", f"{major}.{minor}.99"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "wheels" / torch_npu_wheel.name)
    assert [p.name for p in (tmp_path / "wheels").iterdir()] == [torch_npu_wheel.name]


def test_no_release_of_the_line_is_one_line_and_the_stage_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GRAPHLINT_HOME", str(tmp_path))
    monkeypatch.delenv("GRAPHLINT_TORCHAIR", raising=False)
    assert main(["torchair", "fetch", "--torch", "0.1.2"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("graphlint: no torch_npu release pairs with torch 0.1.2 (none of 0.1.*; the newest on the index is ")
    assert "the torchair stage is skipped" in line
    monkeypatch.setattr(locate, "_running_torch_version", lambda: "0.1.2")
    ctx = StageContext(target=None, options=TraceOptions())  # type: ignore[arg-type]
    assert TorchairStage().unavailable_reason(ctx) == line.removeprefix("graphlint: ")
