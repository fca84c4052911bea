"""Finding torchair's sources: wheels, folders, the environment variable and the cache."""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from graphlint.tracer.torchair.locate import TORCHAIR_DIR, TorchNpuSource, locate_torch_npu, source_at


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


def _fake_wheel(path: Path, value: int, modules: int = 1) -> TorchNpuSource:
    """A wheel holding a torchair package whose ``VALUE`` is ``value``: every value of one digit
    gives a wheel of the same size (stored, fixed member times)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as wheel:
        for index in range(modules):
            name = "__init__.py" if index == 0 else f"module_{index}.py"
            member = zipfile.ZipInfo(f"{TORCHAIR_DIR}/{name}", date_time=(2026, 1, 1, 0, 0, 0))
            wheel.writestr(member, f"VALUE = {value}\n")
    return TorchNpuSource(path, "wheel", None)


def test_a_wheel_rewritten_in_place_is_unpacked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The caches are keyed by the wheel's content: a wheel replaced by another of the same path,
    size and modification time (``cp -p``, a restored backup) is not served the old sources."""
    monkeypatch.setenv("GRAPHLINT_HOME", str(tmp_path / "home"))
    wheel = tmp_path / "torch_npu-2.13.0-cp311-cp311-linux_x86_64.whl"
    source = _fake_wheel(wheel, 1)
    first = source.torchair_dir()
    assert (first / "__init__.py").read_text() == "VALUE = 1\n"
    before = wheel.stat()
    _fake_wheel(wheel, 2)
    os.utime(wheel, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = wheel.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    second = source.torchair_dir()
    assert second != first and (second / "__init__.py").read_text() == "VALUE = 2\n"
    assert (first / "__init__.py").read_text() == "VALUE = 1\n"  # the other wheel's, left alone


def test_the_same_wheel_written_again_keeps_its_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wheel fetched or copied again with the same content (a new time) is neither unpacked nor
    compiled again; its digest is computed once per file, not at every run."""
    import graphlint.tracer.torchair.locate as locate

    monkeypatch.setenv("GRAPHLINT_HOME", str(tmp_path / "home"))
    hashed: list[Path] = []
    content_digest = locate._content_digest
    monkeypatch.setattr(locate, "_content_digest", lambda path: hashed.append(path) or content_digest(path))
    wheel = tmp_path / "torch_npu-2.13.0-cp311-cp311-linux_x86_64.whl"
    source = _fake_wheel(wheel, 1)
    torchair = source.importable_torchair_dir()
    assert source.importable_torchair_dir() == torchair and len(hashed) == 1  # remembered
    marks = {p.name: p.stat().st_mtime_ns for p in torchair.parent.glob(".*")}
    assert len(marks) == 2  # unpacked, compiled
    _fake_wheel(wheel, 1)  # written again: a new mtime and ctime, the same bytes
    assert source.importable_torchair_dir() == torchair and len(hashed) == 2
    assert {p.name: p.stat().st_mtime_ns for p in torchair.parent.glob(".*")} == marks


def test_a_wheel_is_compiled_once_when_two_processes_prepare_it_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The supervisor prepares the wheel beside the worker (``prepare_beside``); a worker that
    needs torchair before that is done waits for it instead of compiling it too."""
    import threading
    import time

    import graphlint.tracer.torchair.locate as locate

    monkeypatch.setenv("GRAPHLINT_HOME", str(tmp_path / "home"))
    compiled: list[Path] = []
    compile_to_bytecode = locate._compile_to_bytecode

    def slow_compile(torchair: Path, mark: Path) -> None:
        compiled.append(torchair)
        time.sleep(0.5)  # both callers are inside before either is done
        compile_to_bytecode(torchair, mark)

    monkeypatch.setattr(locate, "_compile_to_bytecode", slow_compile)
    wheel = tmp_path / "torch_npu-2.13.0-cp311-cp311-linux_x86_64.whl"
    _fake_wheel(wheel, 1, modules=3)
    beside = locate.prepare_beside(str(wheel))
    assert isinstance(beside, threading.Thread)
    time.sleep(0.1)
    torchair = source_at(wheel).importable_torchair_dir()
    beside.join()
    assert len(compiled) == 1
    assert (torchair / "__pycache__" / f"module_2.{sys.implementation.cache_tag}.pyc").is_file()


def test_nothing_is_prepared_for_a_folder(unpacked: Path) -> None:
    from graphlint.tracer.torchair.locate import prepare_beside

    assert prepare_beside(str(unpacked)) is None
