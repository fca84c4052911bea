"""Session fixtures shared by the whole suite."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Where a wheel may already lie (downloaded once for the team); the fixture copies it into
# graphlint's cache instead of downloading it again.
PRELOADED_WHEELS = REPO / ".cache" / "wheels"


@pytest.fixture(scope="session")
def torch_npu_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The torch_npu wheel pairing with the installed torch, in graphlint's cache, obtained the
    way a user obtains it: ``graphlint torchair fetch`` (pip download, skipped when cached).
    ``GRAPHLINT_HOME`` (the Makefile sets ``.cache/graphlint``) keeps it across runs."""
    home = Path(os.environ.get("GRAPHLINT_HOME") or tmp_path_factory.mktemp("graphlint-home"))
    os.environ["GRAPHLINT_HOME"] = str(home)
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
