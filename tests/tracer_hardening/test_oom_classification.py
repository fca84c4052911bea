"""Every way an allocator says memory ran out is an ``oom`` finding (GT010) at the user's line,
whichever stage it happens in; other runtime errors keep their stage's kind."""

from __future__ import annotations

import pytest
import torch

from graphlint.tracer.classify.exception import finding_of_exception


def allocate(exc: BaseException) -> None:
    raise exc  # the user's line


@pytest.mark.parametrize(
    "exc",
    [
        MemoryError(),
        RuntimeError("[enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: can't allocate memory"),
        torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
        RuntimeError("NPU out of memory. Tried to allocate 1.00 GiB (NPU 0; 29.50 GiB total capacity)"),
    ],
    ids=["MemoryError", "cpu-allocator", "torch.OutOfMemoryError", "npu-allocator"],
)
@pytest.mark.parametrize(("stage", "layer", "default_kind"), [("eager", "model", "model-error"), ("aot", "aot", "compile-error")])
def test_out_of_memory_is_an_oom_finding_in_any_stage(exc: BaseException, stage: str, layer: str, default_kind: str) -> None:
    with pytest.raises(BaseException) as raised:
        allocate(exc)
    finding = finding_of_exception(raised.value, stage=stage, layer=layer, user_files={__file__}, default_kind=default_kind)
    assert (finding.kind, finding.code, finding.layer) == ("oom", "GT010", layer)
    assert finding.file == __file__ and finding.line == allocate.__code__.co_firstlineno + 1


def test_other_runtime_errors_keep_the_stage_kind() -> None:
    with pytest.raises(RuntimeError) as raised:
        allocate(RuntimeError("shape '[2, 3]' is invalid for input of size 5"))
    finding = finding_of_exception(raised.value, stage="eager", layer="model", user_files={__file__}, default_kind="model-error")
    assert (finding.kind, finding.code) == ("model-error", "GT001")
