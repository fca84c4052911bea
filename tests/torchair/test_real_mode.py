"""Real mode: an installed torch_npu with CANN runs torchair for real (mode ``real``).

There is no NPU here, so the only thing faked is the device check's input: CANN announcing
itself through ``ASCEND_HOME_PATH``. The installed torch_npu is the wheel's own Python package
on ``sys.path`` (found by ``find_spec``, as on a device); without its native parts its import
fails, and the stage must report that as a finding in mode ``real`` instead of crashing."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest
import torch

from graphlint.tracer.stages import load_stage
from graphlint.tracer.stages.base import StageContext, TraceOptions, TraceTarget
from graphlint.tracer.stages.torchair import runs_for_real
from graphlint.tracer.torchair.locate import TORCHAIR_DIR, locate_torch_npu
from tests.torchair import models

PACKAGE_FILES = ("torch_npu/__init__.py", "torch_npu/version.py", f"{TORCHAIR_DIR}/__init__.py")


def test_installed_torch_npu_with_cann_runs_for_real(
    torch_npu_wheel: Path, torch_npu_wheel_version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site-packages"
    with zipfile.ZipFile(torch_npu_wheel) as wheel:
        for member in PACKAGE_FILES:
            wheel.extract(member, site)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("GRAPHLINT_TORCHAIR", raising=False)
    monkeypatch.setenv("TORCH_DEVICE_BACKEND_AUTOLOAD", "1")  # torch_npu's import changes it
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path / "Ascend"))  # the device check's input

    source = locate_torch_npu(None)
    assert source is not None and (source.kind, source.version, source.has_cann) == ("installed", torch_npu_wheel_version, True)
    assert runs_for_real(source)

    target = TraceTarget(models.Clean(), [(torch.randn(4, 8),)], [{}], name="clean")
    try:
        result = load_stage("torchair").run(StageContext(target, TraceOptions()))
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == "torch_npu"]:
            del sys.modules[name]
    assert (result.status, result.mode) == ("failed", "real")
    (finding,) = result.findings
    assert finding.layer == "torchair" and finding.message.startswith("torch_npu could not be imported")
    assert result.artifacts["torchair"] == f"real {torch_npu_wheel_version}"

