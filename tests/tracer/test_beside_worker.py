"""What needs no loaded target starts with the worker, not after it (issue 19): the static check
of a file target, and torchair's sources made importable (``locate.prepare_beside``)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from graphlint.tracer import ladder
from graphlint.tracer.stages.base import TraceOptions

TARGET = """\
import torch

model = torch.nn.Linear(4, 4)
example_inputs = (torch.ones(2, 4),)
"""


@pytest.fixture
def timeline(monkeypatch: pytest.MonkeyPatch) -> dict[str, list]:
    """When each static check was started (and on which files), when the worker said the target
    was loaded, and what ``prepare_beside`` was asked for."""
    seen: dict[str, list] = {"static": [], "loaded": [], "prepared": []}

    class RecordingCheck(ladder.StaticCheck):
        def __init__(self, user_files: list[str]) -> None:
            seen["static"].append((time.monotonic(), list(user_files)))
            super().__init__(user_files)

    handle, prepare = ladder._Worker._handle, ladder.prepare_beside

    def recording_handle(self: ladder._Worker, event: dict, *rest: object) -> object:
        if event["event"] == "target":
            seen["loaded"].append(time.monotonic())
        return handle(self, event, *rest)

    def recording_prepare(explicit: str | None = None) -> object:
        seen["prepared"].append(explicit)
        return prepare(explicit)

    monkeypatch.setattr(ladder, "StaticCheck", RecordingCheck)
    monkeypatch.setattr(ladder._Worker, "_handle", recording_handle)
    monkeypatch.setattr(ladder, "prepare_beside", recording_prepare)
    return seen


def test_a_file_targets_static_check_and_torchair_start_before_it_is_loaded(
    tmp_path: Path, timeline: dict[str, list], torch_npu_wheel: Path
) -> None:
    target = tmp_path / "linear.py"
    target.write_text(TARGET)
    options = TraceOptions(stages=("eager", "torchair"), torchair=str(torch_npu_wheel))
    report = ladder.run_ladder(str(target), options)
    [(started, files)] = timeline["static"]  # one check, not restarted once the files were reported
    assert files == [str(target.resolve())]
    assert started < timeline["loaded"][0]
    assert report["static"]["error"] is None
    assert timeline["prepared"] == [str(torch_npu_wheel)]
    assert [(s["name"], s["status"], s["mode"]) for s in report["stages"]] == [
        ("eager", "passed", "real"), ("torchair", "passed", "offline"),
    ]


def test_a_module_factorys_static_check_starts_once_its_file_is_known(
    tmp_path: Path, timeline: dict[str, list], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tiny_factory.py").write_text(TARGET + "\n\ndef make():\n    return model, example_inputs\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    report = ladder.run_ladder("tiny_factory:make", TraceOptions(stages=("eager",)))
    [(started, files)] = timeline["static"]
    assert files == [str((tmp_path / "tiny_factory.py").resolve())]
    assert started >= timeline["loaded"][0]
    assert report["static"]["error"] is None and timeline["prepared"] == []
