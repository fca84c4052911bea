"""Find torchair's sources: in an installed torch_npu, a wheel, an unpacked wheel or a folder.

torch_npu is never imported here (importing it needs CANN); an installed one is found with
``importlib.util.find_spec``. Places are tried in this order: ``--torchair PATH``, the
``GRAPHLINT_TORCHAIR`` variable, an installed torch_npu, then graphlint's wheel cache
(``$GRAPHLINT_HOME/wheels``, filled by ``graphlint torchair fetch``).
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SourceKind = Literal["installed", "wheel", "dir"]

TORCHAIR_DIR = "torch_npu/dynamo/torchair"  # where torchair lives inside torch_npu
NATIVE_FUNCTIONS_YAML = "torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml"
_VERSION_FILE = "torch_npu/version.py"
_VERSION = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE)
_WHEEL_VERSION = re.compile(r"^torch_npu-([^-]+)-")
_UNPACKED_MARK = ".complete"  # written last: a folder without it is a partial unpack
# written once the unpacked modules are compiled to this Python's bytecode (pyc names carry the tag)
_BYTECODE_MARK = f".bytecode-{sys.implementation.cache_tag}"
_RELEASE = re.compile(r"^(\d+)\.(\d+)")
# Where CANN announces itself: the variables its set_env.sh exports, then its default prefix.
_CANN_VARIABLES = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH")
_CANN_DEFAULT_DIR = Path("/usr/local/Ascend/ascend-toolkit/latest")


def graphlint_home() -> Path:
    """graphlint's own cache folder: ``$GRAPHLINT_HOME``, else ``~/.cache/graphlint``."""
    return Path(os.environ.get("GRAPHLINT_HOME") or Path.home() / ".cache" / "graphlint")


def wheel_cache_dir() -> Path:
    return graphlint_home() / "wheels"


def release_line(torch_version: str) -> str:
    """``2.14.1+cpu`` → ``2.14``: the line of releases one torch_npu series is built for."""
    found = _RELEASE.match(torch_version)
    return ".".join(found.groups()) if found else torch_version


def unavailable_marker(torch_version: str, cache: Path | None = None) -> Path:
    """Where ``graphlint torchair fetch`` notes that no torch_npu pairs with a torch's X.Y line."""
    return (cache or wheel_cache_dir()) / f"unavailable-{release_line(torch_version)}.txt"


def unavailable_note(torch_version: str | None = None) -> str | None:
    """What ``graphlint torchair fetch`` found when no torch_npu release pairs with this torch."""
    torch_version = torch_version or _running_torch_version()
    if not torch_version:
        return None
    try:
        return unavailable_marker(torch_version).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


@dataclass(frozen=True)
class TorchNpuSource:
    """One torch_npu whose torchair sources graphlint can read (and, offline, import)."""

    path: Path  # the wheel file, or the folder that holds ``torch_npu/``
    kind: SourceKind
    version: str | None
    has_cann: bool = False  # only an installed torch_npu on a machine with CANN runs for real

    def read_text(self, relpath: str) -> str:
        """A file of the torch_npu tree, e.g. ``torch_npu/version.py``; FileNotFoundError if absent."""
        if self.kind == "wheel":
            with zipfile.ZipFile(self.path) as wheel:
                try:
                    return wheel.read(relpath).decode("utf-8")
                except KeyError:
                    raise FileNotFoundError(f"{relpath} not in {self.path}") from None
        return (self.path / relpath).read_text(encoding="utf-8")

    def torchair_dir(self) -> Path:
        """A folder holding torchair's sources as a package named ``torchair``.

        A wheel is unpacked once (Python files and data, not native libraries) into graphlint's
        cache, keyed by the wheel's content (``wheel_digest``), so repeated runs reuse it and a
        wheel rewritten in place is unpacked again."""
        if self.kind != "wheel":
            return self.path / TORCHAIR_DIR
        target = graphlint_home() / "torchair-src" / f"{self.path.stem}-{wheel_digest(self.path)[:16]}"
        if not (target / _UNPACKED_MARK).exists():
            with _cache_lock(target):
                if not (target / _UNPACKED_MARK).exists():  # another process may have unpacked it meanwhile
                    _unpack_torchair(self.path, target)
        return target / "torchair"

    def importable_torchair_dir(self) -> Path:
        """``torchair_dir()``; for a wheel, unpacked in graphlint's cache, its modules are compiled
        to bytecode beside their sources first (once per wheel and Python). The worker writes no
        bytecode, and compiling torchair's thousand modules from source cost each offline run
        about 1.3 CPU-s. An installed torch_npu has its own bytecode; a folder the user gave is
        not graphlint's to write into."""
        torchair = self.torchair_dir()
        mark = torchair.parent / _BYTECODE_MARK
        # a cache graphlint may not write to (shared, read-only) is imported from source, as before
        if self.kind == "wheel" and not mark.exists() and os.access(torchair, os.W_OK):
            with _cache_lock(torchair.parent):
                if not mark.exists():  # another process may have compiled it meanwhile
                    _compile_to_bytecode(torchair, mark)
        return torchair

    def native_modules(self) -> set[str]:
        """Dotted names of torchair's compiled extension modules (``torchair.core._torchair``…):
        they need CANN, so the offline runner replaces them with stand-ins."""
        if self.kind == "wheel":
            with zipfile.ZipFile(self.path) as wheel:
                names = [n for n in wheel.namelist() if n.startswith(TORCHAIR_DIR + "/")]
        else:
            base = self.path
            names = [p.relative_to(base).as_posix() for p in (base / TORCHAIR_DIR).rglob("*.so")]
        return {_module_name(n) for n in names if n.endswith(".so")}

    def pairs_with(self, torch_version: str) -> bool:
        """torch_npu X.Y.* is built for torch X.Y.*; unknown versions are given the benefit."""
        mine, theirs = _RELEASE.match(self.version or ""), _RELEASE.match(torch_version)
        return mine is None or theirs is None or mine.groups() == theirs.groups()

    def describe(self) -> str:
        return f"torch_npu {self.version or '(unknown version)'} ({self.kind}: {self.path})"


def wheel_digest(path: Path) -> str:
    """The SHA-256 of a wheel's content, which every cache made from the wheel is keyed by: a
    wheel rewritten in place (same name, size and time) gets new caches, and the same wheel
    fetched again keeps its old ones. Hashing the 44 MB torch_npu wheel costs about 0.04 CPU-s;
    the digest is remembered under the file's identity (path, size, mtime, ctime, inode), which
    any rewrite changes: a writer can set the mtime back, never the ctime."""
    stat = path.stat()
    identity = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{stat.st_ctime_ns}|{stat.st_ino}"
    memo = graphlint_home() / "wheel-digests" / hashlib.sha256(identity.encode()).hexdigest()[:32]
    try:
        remembered = memo.read_text(encoding="ascii").strip()
        if re.fullmatch(r"[0-9a-f]{64}", remembered):
            return remembered
    except OSError:
        pass
    digest = _content_digest(path)
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        partial = memo.with_name(f"{memo.name}.{os.getpid()}")
        partial.write_text(digest, encoding="ascii")
        os.replace(partial, memo)  # atomic: a concurrent reader sees no digest or the whole one
    except OSError:
        pass  # a cache graphlint may not write to: hashed again next time
    return digest


def _content_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def prepare_beside(explicit: str | None = None) -> threading.Thread | None:
    """Unpack and compile the torchair of a wheel (what ``importable_torchair_dir`` does once per
    wheel) in a thread of the caller, started now; None when there is nothing to prepare (no
    wheel; a folder or an installed torch_npu is imported as it is). The supervisor starts it
    beside the worker, which imports torch and loads the target meanwhile: torchair is needed
    only in the dynamo stage (or its own), and then waits on the cache's lock for what is not
    ready yet instead of doing it again. Any failure is left to the worker's own import to
    meet and report."""
    try:
        source = locate_torch_npu(explicit)
    except (OSError, zipfile.BadZipFile):
        return None
    if source is None or source.kind != "wheel":
        return None

    def prepare() -> None:
        try:
            source.importable_torchair_dir()
        except Exception:  # noqa: BLE001 - the worker's import meets it again and reports it
            pass

    thread = threading.Thread(target=prepare, name="graphlint-torchair-prepare", daemon=True)
    thread.start()
    return thread


def locate_torch_npu(explicit: str | None = None) -> TorchNpuSource | None:
    """The torch_npu to use, or None when there is none anywhere.

    Raises FileNotFoundError when ``explicit`` (or ``GRAPHLINT_TORCHAIR``) names a path that holds
    no torchair: a path the user typed must not be silently replaced by another one."""
    for given in (explicit, os.environ.get("GRAPHLINT_TORCHAIR")):
        if given:
            return source_at(Path(given).expanduser())
    return installed_torch_npu() or cached_torch_npu()


def torchair_option_error(explicit: str | None) -> str | None:
    """What is wrong with ``--torchair PATH`` or ``GRAPHLINT_TORCHAIR`` (one line), or None: a
    path the user gave that holds no torchair is a usage error, never a skipped stage."""
    for name, given in (("--torchair", explicit), ("GRAPHLINT_TORCHAIR", os.environ.get("GRAPHLINT_TORCHAIR"))):
        if given:
            try:
                source_at(Path(given).expanduser())
            except FileNotFoundError as exc:
                return f"{name}: {exc}"
            return None
    return None


def source_at(path: Path) -> TorchNpuSource:
    """A wheel file, an unpacked wheel or site-packages folder, or the ``torch_npu`` folder itself."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    if path.is_file() and zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as wheel:
            if f"{TORCHAIR_DIR}/__init__.py" not in wheel.namelist():
                raise FileNotFoundError(f"{path} is not a torch_npu wheel with torchair inside")
        return _with_version(TorchNpuSource(path, "wheel", None))
    for root in (path, path.parent):
        if (root / TORCHAIR_DIR / "__init__.py").is_file():
            return _with_version(TorchNpuSource(root, "dir", None))
    raise FileNotFoundError(f"no torchair under {path}: expected a torch_npu wheel or a folder with {TORCHAIR_DIR}/")


def installed_torch_npu() -> TorchNpuSource | None:
    try:
        spec = importlib.util.find_spec("torch_npu")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations))).parent
    if not (root / TORCHAIR_DIR / "__init__.py").is_file():
        return None
    return _with_version(TorchNpuSource(root, "installed", None, has_cann=cann_present()))


def cached_torch_npu(torch_version: str | None = None) -> TorchNpuSource | None:
    """The newest wheel in the cache, preferring one that pairs with ``torch_version``."""
    wheels = sorted(wheel_cache_dir().glob("torch_npu-*.whl"), key=lambda p: _release_key(p.name), reverse=True)
    sources = [TorchNpuSource(w, "wheel", wheel_version(w)) for w in wheels]
    if torch_version is None:
        torch_version = _running_torch_version()
    pairing = [s for s in sources if torch_version and s.pairs_with(torch_version)]
    chosen = (pairing or sources or [None])[0]
    return chosen


def cann_present() -> bool:
    return any(os.environ.get(v) for v in _CANN_VARIABLES) or _CANN_DEFAULT_DIR.is_dir()


def _with_version(source: TorchNpuSource) -> TorchNpuSource:
    try:
        found = _VERSION.search(source.read_text(_VERSION_FILE))
        version = found.group(1) if found else None
    except (FileNotFoundError, OSError, UnicodeDecodeError):
        version = wheel_version(source.path) if source.kind == "wheel" else None
    return TorchNpuSource(source.path, source.kind, version, source.has_cann)


def wheel_version(path: Path) -> str | None:
    found = _WHEEL_VERSION.match(path.name)
    return found.group(1) if found else None


def _release_key(name: str) -> tuple[int, ...]:
    version = wheel_version(Path(name)) or ""
    return tuple(int(n) for n in re.findall(r"\d+", version)[:4])


def _module_name(relpath: str) -> str:
    """``torch_npu/dynamo/torchair/core/_torchair.cpython-311-x86_64-linux-gnu.so`` → ``torchair.core._torchair``."""
    inside = relpath[len(TORCHAIR_DIR) + 1 :]
    *package, filename = inside.split("/")
    return ".".join(["torchair", *package, filename.split(".", 1)[0]])


def _running_torch_version() -> str | None:
    """The installed torch's version, read from its metadata (never by importing torch)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return None


@contextmanager
def _cache_lock(target: Path) -> Iterator[None]:
    """Held while ``target`` (a wheel's folder in the cache) is unpacked or compiled, so that a
    second process doing the same (the supervisor preparing it, another trace) waits and then
    finds it done. Where no lock file can be made (a read-only cache), nothing is held."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle = open(target.with_name(f"{target.name}.lock"), "a")  # noqa: SIM115 - closed below
    except OSError:
        handle = None
    if handle is None:
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _compile_to_bytecode(torchair: Path, mark: Path) -> None:
    import compileall
    import warnings

    # quiet=2: a module this Python cannot compile is left to fail at import, as it would;
    # its warnings (invalid escapes) are torchair's, which an import would not show either
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = compileall.compile_dir(torchair, quiet=2, workers=1)
    if compiled:  # else a module failed to compile or be written: the next run tries again
        mark.touch()


def _unpack_torchair(wheel_path: Path, target: Path) -> None:
    """Copy ``torch_npu/dynamo/torchair/**`` out of the wheel, without native libraries, into
    ``target``: unpacked beside it and renamed into place, so that a concurrent graphlint
    never sees a partial folder (whichever process renames first wins; the other's copy goes)."""
    staging = target.with_name(f"{target.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    prefix = TORCHAIR_DIR + "/"
    with zipfile.ZipFile(wheel_path) as wheel:
        for member in wheel.namelist():
            if not member.startswith(prefix) or member.endswith("/") or member.endswith(".so"):
                continue
            relative = Path("torchair", member[len(prefix):])
            if ".." in relative.parts:
                continue  # a hostile archive must not write outside the cache
            out = staging / relative
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(wheel.read(member))
    (staging / _UNPACKED_MARK).touch()
    if target.exists() and not (target / _UNPACKED_MARK).exists():
        shutil.rmtree(target, ignore_errors=True)  # left by an unpack that was interrupted
    try:
        staging.rename(target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)  # another process unpacked it first
