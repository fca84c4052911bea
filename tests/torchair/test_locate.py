"""Finding torchair's sources: wheels, folders, the environment variable and the cache."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
import torch

from graphlint.tracer.torchair.locate import TORCHAIR_DIR, locate_torch_npu, source_at


@pytest.fixture(scope="module")
def unpacked(torch_npu_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site-packages-like folder with torch_npu's version file and torchair's package file."""
    root = tmp_path_factory.mktemp("site-packages")
    with zipfile.ZipFile(torch_npu_wheel) as wheel:
        for member in ("torch_npu/version.py", f"{TORCHAIR_DIR}/__init__.py"):
            wheel.extract(member, root)
    return root


def test_wheel_gives_version_and_native_modules(torch_npu_wheel: Path, torch_npu_wheel_version: str) -> None:
    source = source_at(torch_npu_wheel)
    assert (source.kind, source.version) == ("wheel", torch_npu_wheel_version)
    assert "torchair.core._torchair" in source.native_modules()
    assert source.pairs_with(f"{torch.__version__}") and not source.pairs_with("2.5.1")
    assert f"__version__ = '{torch_npu_wheel_version}'" in source.read_text("torch_npu/version.py")


@pytest.mark.parametrize("where", ["site-packages", "torch_npu folder"])
def test_folder_forms(unpacked: Path, where: str, torch_npu_wheel_version: str) -> None:
    path = unpacked if where == "site-packages" else unpacked / "torch_npu"
    source = source_at(path)
    assert (source.kind, source.version, source.path) == ("dir", torch_npu_wheel_version, unpacked)


def test_a_path_without_torchair_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no torchair"):
        locate_torch_npu(str(tmp_path))


def test_environment_variable_then_cache(
    torch_npu_wheel: Path, unpacked: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHLINT_TORCHAIR", str(unpacked))
    assert locate_torch_npu(None).kind == "dir"
    assert locate_torch_npu(str(torch_npu_wheel)).kind == "wheel"  # an explicit path wins
    monkeypatch.delenv("GRAPHLINT_TORCHAIR")
    cached = locate_torch_npu(None)  # no torch_npu is installed here: the fetched wheel
    assert cached is not None and cached.path.name == torch_npu_wheel.name


def test_nothing_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHLINT_HOME", str(tmp_path))
    monkeypatch.delenv("GRAPHLINT_TORCHAIR", raising=False)
    assert locate_torch_npu(None) is None


def test_a_cached_wheel_is_imported_from_bytecode_written_once(
    torch_npu_wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setenv("GRAPHLINT_HOME", str(tmp_path))
    source = source_at(torch_npu_wheel)
    torchair = source.torchair_dir()
    compiled = torchair / "__pycache__" / f"npu_fx_compiler.{sys.implementation.cache_tag}.pyc"
    assert not compiled.exists()  # unpacking writes sources only
    assert source.importable_torchair_dir() == torchair
    assert compiled.is_file()
    # the mark keeps a second run from compiling again
    stamp = compiled.stat().st_mtime_ns
    assert source.importable_torchair_dir() == torchair and compiled.stat().st_mtime_ns == stamp


def test_a_folder_the_user_gave_gets_no_bytecode(unpacked: Path) -> None:
    source = source_at(unpacked)
    assert source.importable_torchair_dir() == unpacked / TORCHAIR_DIR
    assert not (unpacked / TORCHAIR_DIR / "__pycache__").exists()
