"""Kernels given with ``torch.library.Library.impl`` are kept for the audit, whatever form names
the op, and registration behaves as without graphlint."""

from __future__ import annotations

import torch

from graphlint.tracer.capture.custom_ops import python_implementation
from graphlint.tracer.capture.library_kernels import keep_library_kernels, library_kernel


def _cpu_kernel(x: torch.Tensor) -> torch.Tensor:
    return x + 1


def _cuda_kernel(x: torch.Tensor) -> torch.Tensor:
    return x + 2


def _shape_kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def test_each_way_of_naming_the_op_keeps_its_device_kernel() -> None:
    keep_library_kernels()
    keep_library_kernels()  # once per process: a second call wraps nothing twice
    library = torch.library.Library("graphlint_kernel_tests", "DEF")
    library.define("plain(Tensor x) -> Tensor")
    library.define("named.overload(Tensor x) -> Tensor")
    library.define("qualified(Tensor x) -> Tensor")
    library.impl("plain", _cpu_kernel, "CPU")
    library.impl("plain", _shape_kernel, "Meta")  # a shape kernel is not what a device runs
    library.impl("named.overload", _cpu_kernel, "CPU")
    library.impl("graphlint_kernel_tests::qualified", _cpu_kernel, "CPU")
    library.impl("graphlint_kernel_tests::qualified", _cuda_kernel, "CUDA")  # a device's kernel first

    ops = torch.ops.graphlint_kernel_tests
    assert library_kernel(ops.plain.default) is _cpu_kernel
    assert library_kernel(ops.named.overload) is _cpu_kernel
    assert library_kernel(ops.qualified.default) is _cuda_kernel
    assert python_implementation(ops.plain.default) is _cpu_kernel  # what the audit traces
    assert torch.equal(ops.plain(torch.zeros(2)), torch.ones(2))  # registered as it would be
    assert library_kernel(torch.ops.aten.add.Tensor) is None
    del library
