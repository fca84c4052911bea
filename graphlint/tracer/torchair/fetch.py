"""``graphlint torchair fetch``: put the torch_npu wheel that pairs with this torch into the cache.

The wheel is downloaded by pip (``pip download --no-deps``), never installed: graphlint only
reads torchair's Python sources out of it. Any platform's wheel carries the same sources, so the
download asks for a manylinux x86-64 build whatever machine this is.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from graphlint.tracer.torchair.locate import TorchNpuSource, wheel_cache_dir

_PLATFORMS = ("manylinux_2_28_x86_64", "manylinux2014_x86_64")


class FetchError(RuntimeError):
    pass


def pairing_version(torch_version: str) -> str:
    """torch_npu's release for a torch: the same version without a local part (2.13.0+cpu → 2.13.0)."""
    return torch_version.split("+", 1)[0]


def fetch_wheel(version: str, cache: Path | None = None) -> TorchNpuSource:
    """The cached torch_npu ``version`` wheel, downloaded first when it is not there yet."""
    cache = cache or wheel_cache_dir()
    cached = _cached(version, cache)
    if cached is not None:
        return cached
    cache.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "pip", "download", f"torch-npu=={version}", "--no-deps",
        "--only-binary=:all:", "--python-version", f"{sys.version_info.major}.{sys.version_info.minor}",
        "--dest", str(cache), "--quiet",
    ]
    for platform in _PLATFORMS:
        command += ["--platform", platform]
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode != 0:
        raise FetchError(f"pip could not download torch-npu=={version}:\n{completed.stderr.strip()}")
    fetched = _cached(version, cache)
    if fetched is None:
        raise FetchError(f"pip reported success but no torch_npu-{version} wheel is in {cache}")
    return fetched


def _cached(version: str, cache: Path) -> TorchNpuSource | None:
    for wheel in sorted(cache.glob(f"torch_npu-{version}-*.whl")):
        return TorchNpuSource(wheel, "wheel", version)
    return None

