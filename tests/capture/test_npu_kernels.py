"""The CPU-fallback check (GL204): torch_npu's kernel list, read from the real wheel."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from graphlint.tracer.capture.audit import audit_target
from graphlint.tracer.capture.npu_kernels import has_npu_kernel, parse_npu_kernels, read_npu_kernels
from graphlint.tracer.target import load_target
from graphlint.tracer.torchair.locate import locate_torch_npu
from tests.capture.conftest import CAPTURE_SAMPLES

aten = torch.ops.aten
FALLBACK_SAMPLE = next(s for s in CAPTURE_SAMPLES if s.stem == "cpu_fallback")


@pytest.fixture(scope="module")
def npu_kernels(torch_npu_wheel: Path) -> frozenset[str]:
    source = locate_torch_npu(str(torch_npu_wheel))
    assert source is not None
    return read_npu_kernels(source)


def test_the_wheel_lists_aten_ops_by_name_and_overload(npu_kernels: frozenset[str]) -> None:
    assert len(npu_kernels) > 1000
    assert {"addmm", "gelu.out", "_local_scalar_dense", "index.Tensor", "npu_format_cast"} <= npu_kernels
    assert "lgamma" not in npu_kernels and "lgamma.out" not in npu_kernels


def test_libyaml_and_the_pure_python_parser_read_the_same_kernels(
    torch_npu_wheel: Path, npu_kernels: frozenset[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    from graphlint.tracer.capture import npu_kernels as module

    monkeypatch.setattr(module, "_YAML_LOADER", yaml.SafeLoader)
    source = locate_torch_npu(str(torch_npu_wheel))
    assert source is not None and read_npu_kernels(source) == npu_kernels


@pytest.mark.parametrize(
    ("op", "has_kernel"),
    [
        (aten.addmm.default, True),  # listed by name
        (aten.index.Tensor, True),  # listed with its overload
        (aten.gelu.default, True),  # structured: runs gelu.out, which is listed
        (aten.t.default, True),  # not listed, but a composite that decomposes
        (aten.expand.default, True),
        (aten.copy.default, True),  # functionalization's copy_: the in-place kernel is listed
        (aten.slice_scatter.default, True),  # a non-structured composite: slice + copy_
        (aten.select_scatter.default, True),
        (aten.lgamma.default, False),  # neither listed nor decomposing: CPU fallback
        (aten.special_i0e.default, False),
    ],
    ids=str,
)
def test_has_npu_kernel(op: torch._ops.OpOverload, has_kernel: bool, npu_kernels: frozenset[str]) -> None:
    assert has_npu_kernel(op, npu_kernels) is has_kernel


def test_parse_reads_names_and_schemas_of_every_list_section() -> None:
    text = """
backend: NPU
cpp_namespace: at_npu::native
supported:
- abs
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  impl_ns: op_api
symint:
- as_strided_
custom:
- func: npu_format_cast(Tensor self, int acl_format) -> Tensor
"""
    assert parse_npu_kernels(text) == {"abs", "add.Tensor", "as_strided_", "npu_format_cast"}


def test_without_torch_npu_the_fallback_check_is_skipped_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHLINT_HOME", str(tmp_path))  # an empty wheel cache
    monkeypatch.delenv("GRAPHLINT_TORCHAIR", raising=False)
    result = audit_target(load_target(str(FALLBACK_SAMPLE)), torchair=None)
    assert result.npu_kernels is None
    assert "CPU-fallback check skipped: no torch_npu found" in result.fallback_check_skipped
    assert [f.code for f in result.findings] == []


def test_a_wrong_torchair_path_skips_only_the_fallback_check(tmp_path: Path) -> None:
    result = audit_target(load_target(str(CAPTURE_SAMPLES[0].parent / "boolean_mask.py")), torchair=str(tmp_path))
    assert result.fallback_check_skipped.startswith("CPU-fallback check skipped: no torchair under")
    assert [f.code for f in result.findings] == ["GL202"]
