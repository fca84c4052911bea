"""Session fixtures shared by the whole suite."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Where a wheel may already lie (downloaded once for the team); the fixture copies it into
# graphlint's cache instead of downloading it again.
PRELOADED_WHEELS = REPO / ".cache" / "wheels"
DEFAULT_HOME = REPO / ".cache" / "graphlint"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The corpus lint first: by far the longest tests, they open the first pytest-xdist worker's
    share (``--dist worksteal`` hands out runs of tests in this order), so that the rest of the
    suite runs beside them instead of after them. Otherwise the order is pytest's own."""
    items.sort(key=lambda item: item.get_closest_marker("corpus") is None)


@pytest.fixture(scope="session")
def torch_npu_wheel() -> Path:
    """The torch_npu wheel pairing with the installed torch, in graphlint's cache, obtained the
    way a user obtains it: ``graphlint torchair fetch`` (pip download, skipped when cached).
    The cache is ``GRAPHLINT_HOME``, else ``.cache/graphlint`` as the Makefile sets it, so the
    wheel, its unpacked sources and the registry scan are kept across runs."""
    home = Path(os.environ.setdefault("GRAPHLINT_HOME", str(DEFAULT_HOME)))
    cache = home / "wheels"
    cache.mkdir(parents=True, exist_ok=True)
    for wheel in PRELOADED_WHEELS.glob("torch_npu-*.whl"):
        if not (cache / wheel.name).exists():
            shutil.copy2(wheel, cache / wheel.name)
    fetched = subprocess.run(
        [sys.executable, "-m", "graphlint", "torchair", "fetch"], capture_output=True, text=True, env=os.environ
    )
    assert fetched.returncode == 0, fetched.stderr
    return Path(fetched.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def torch_npu_wheel_version(torch_npu_wheel: Path) -> str:
    """The version the fetched wheel declares in its own METADATA (not graphlint's reading of it):
    which one it is depends on the torch of the test environment."""
    with zipfile.ZipFile(torch_npu_wheel) as wheel:
        (metadata,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        text = wheel.read(metadata).decode("utf-8")
    return re.search(r"^Version: (\S+)$", text, re.MULTILINE).group(1)


@pytest.fixture
def audit_kernels_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Library.impl`` refuses the registrations the capture audit makes (aten Meta kernels), the
    way torch refuses a second Python kernel for an op. Every other registration goes through:
    torch makes its own when a module of it is first imported (``import torch._dynamo`` registers
    ``torch._inductor.test_operators``' kernels), and refusing those would leave that module half
    imported for the rest of the test process ("partially initialized module 'torch._dynamo'")."""
    import torch

    register = torch.library.Library.impl

    def refuse_the_audits(self, op_name, fn, dispatch_key="", **kwargs):
        if (self.ns, dispatch_key) == ("aten", "Meta"):
            raise RuntimeError(
                f"This is not allowed since there's already a kernel registered from python overriding {op_name}"
            )
        return register(self, op_name, fn, dispatch_key, **kwargs)

    monkeypatch.setattr(torch.library.Library, "impl", refuse_the_audits)
