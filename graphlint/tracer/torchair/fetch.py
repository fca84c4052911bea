"""``graphlint torchair fetch``: put the torch_npu wheel that pairs with this torch into the cache.

The wheel is downloaded by pip (``pip download --no-deps``), never installed: graphlint only
reads torchair's Python sources out of it. Any platform's wheel carries the same sources, so the
download asks for a manylinux x86-64 build whatever machine this is.

Which release pairs with a torch: torch_npu follows torch's releases but not its patch releases
(torch 2.14.1 has no torch_npu 2.14.1; 2.14.0 is built for the 2.14 line) and adds its own
``.postN`` rebuilds (torch 2.6.0 → torch_npu 2.6.0.post5). So pip is asked, in this order, for
the newest release of the same X.Y.Z (any ``.postN``), then for the newest of the same X.Y.
Where the index has none of the X.Y line, that is remembered in the cache and the torchair stage
is skipped with that reason.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from graphlint.tracer.torchair.locate import (
    TorchNpuSource,
    release_line,
    unavailable_marker,
    wheel_cache_dir,
    wheel_version,
)

PLATFORMS = ("manylinux_2_28_x86_64", "manylinux2014_x86_64")
# pip's last word when nothing satisfies a requirement; the list is empty when it reached no index.
_NO_MATCH = re.compile(r"Could not find a version that satisfies the requirement .*\(from versions: ([^)]*)\)")


class FetchError(RuntimeError):
    pass


class NoPairingRelease(FetchError):
    """The index has torch_npu releases, but none for this torch's X.Y line."""


def pairing_specifiers(torch_version: str) -> tuple[str, str]:
    """pip requirements for the torch_npu of a torch, best first (2.14.1+cpu → ``==2.14.1.*``,
    ``>=2.14,<2.15``). ``==X.Y.Z.*`` admits X.Y.Z and its ``.postN`` rebuilds; neither form
    admits pre-releases."""
    from packaging.version import Version

    release = Version(torch_version).release + (0, 0)
    major, minor, micro = release[:3]
    return f"=={major}.{minor}.{micro}.*", f">={major}.{minor},<{major}.{minor + 1}"


def fetch_for_torch(torch_version: str, cache: Path | None = None) -> TorchNpuSource:
    """The cached torch_npu wheel that pairs with ``torch_version``, downloaded first when none
    is there; NoPairingRelease (and a note in the cache) when the index has none."""
    cache = cache or wheel_cache_dir()
    marker = unavailable_marker(torch_version, cache)
    offered: list[str] = []
    for requirement in pairing_specifiers(torch_version):
        found = _cached(requirement, cache) or _download(requirement, cache, offered)
        if found is not None:
            marker.unlink(missing_ok=True)
            return found
    newest = f"; the newest on the index is {offered[0]}" if offered else ""
    message = (
        f"no torch_npu release pairs with torch {torch_version} (none of {release_line(torch_version)}.*{newest}): "
        "the torchair stage is skipped; pass --torchair PATH to use another torch_npu"
    )
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(message + "\n", encoding="utf-8")
    raise NoPairingRelease(message)


def fetch_wheel(version: str, cache: Path | None = None) -> TorchNpuSource:
    """The cached torch_npu ``version`` wheel, downloaded first when it is not there yet."""
    cache = cache or wheel_cache_dir()
    found = _cached(f"=={version}", cache) or _download(f"=={version}", cache, [])
    if found is None:
        raise FetchError(f"pip could not download torch-npu=={version}: the index has no such release")
    return found


def _download(requirement: str, cache: Path, offered: list[str]) -> TorchNpuSource | None:
    """pip's newest match for ``torch-npu<requirement>`` into ``cache``; None when the index has
    torch_npu but nothing that matches (its releases, newest first, go to ``offered``)."""
    cache.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "pip", "download", f"torch-npu{requirement}", "--no-deps",
        "--only-binary=:all:", "--python-version", f"{sys.version_info.major}.{sys.version_info.minor}",
        "--dest", str(cache), "--quiet",
    ]
    for platform in PLATFORMS:
        command += ["--platform", platform]
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode == 0:
        fetched = _cached(requirement, cache)
        if fetched is None:
            raise FetchError(f"pip reported success but no torch-npu{requirement} wheel is in {cache}")
        return fetched
    no_match = _NO_MATCH.search(completed.stderr)
    versions = [v.strip() for v in no_match.group(1).split(",")] if no_match else []
    if not versions or versions == ["none"]:
        raise FetchError(f"pip could not download torch-npu{requirement}:\n{completed.stderr.strip()}")
    offered[:] = sorted(versions, key=_version_key, reverse=True)
    return None


def _cached(requirement: str, cache: Path) -> TorchNpuSource | None:
    """The newest wheel in ``cache`` whose version satisfies ``requirement``."""
    from packaging.specifiers import SpecifierSet

    wanted = SpecifierSet(requirement)
    matching = [(wheel_version(w), w) for w in cache.glob("torch_npu-*.whl")]
    matching = [(v, w) for v, w in matching if v and wanted.contains(v, prereleases=True)]
    if not matching:
        return None
    version, wheel = max(matching, key=lambda pair: _version_key(pair[0]))
    return TorchNpuSource(wheel, "wheel", version)


def _version_key(version: str) -> object:
    from packaging.version import InvalidVersion, Version

    try:
        return (1, Version(version))
    except InvalidVersion:
        return (0, version)
