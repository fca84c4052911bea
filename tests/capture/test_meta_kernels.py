"""The audit's Meta kernels: in place while active on this torch, torch's own back afterwards."""

from __future__ import annotations

import pytest
import torch

from graphlint.tracer.capture.meta_kernels import AuditPatchError, meta_kernels, nonzero_all_true


def meta_nonzero_shape() -> tuple[int, ...] | str:
    try:
        return tuple(torch.empty(3, 2, device="meta").nonzero().shape)
    except Exception as exc:  # torch's own meta nonzero refuses: there is no data
        return type(exc).__name__


def test_stand_ins_answer_on_meta_and_torch_kernels_come_back() -> None:
    before = meta_nonzero_shape()
    recorded_before = set(getattr(torch.library, "_impls", set()))
    with meta_kernels({"_local_scalar_dense": lambda t: 7, "nonzero": nonzero_all_true}):
        assert torch.ones(1, device="meta").item() == 7
        assert meta_nonzero_shape() == (6, 2)
    assert meta_nonzero_shape() == before != (6, 2)
    with pytest.raises(Exception):  # torch's own Meta kernel is back: a meta tensor has no value
        torch.ones(1, device="meta").item()
    assert set(getattr(torch.library, "_impls", set())) == recorded_before


@pytest.mark.usefixtures("audit_kernels_refused")
def test_a_kernel_this_torch_refuses_raises_audit_patch_error() -> None:
    with pytest.raises(AuditPatchError, match=r"aten\._local_scalar_dense .*RuntimeError: This is not allowed"):
        with meta_kernels({"_local_scalar_dense": lambda t: 1}):
            pass
