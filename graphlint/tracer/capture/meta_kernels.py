"""The Meta kernels the capture audit puts in place for its run on ``meta``, on every torch ≥ 2.6.

Meta tensors hold no data, so two aten ops have no answer there: ``_local_scalar_dense`` (what
``.item()`` and ``bool(t)`` call) and ``nonzero`` (its output size is the number of true
elements). The audit answers them with stand-ins (``1`` / ``1.0`` / ``True``; every element
non-zero) so that the run goes on to later graphs.

Torch releases differ in how such a kernel is put in place, and each difference is detected, not
read from a version number:

- torch registers its own Python Meta kernel for ``_local_scalar_dense`` (and, from 2.7, for
  ``nonzero``), and ``Library.impl`` refuses to register a second Python kernel for the same op
  and key. From torch 2.8 it takes ``allow_override=True`` to do it anyway; torch 2.6 and 2.7 have
  no such argument and always refuse, so there the op's entry is taken out of torch's record of
  Python kernels for the registration and put back once the audit's library is destroyed. The C++
  dispatcher itself lets a later kernel override an earlier one and restores the earlier one when
  the later is removed, on every release.
- ``nonzero``'s stand-in is graphlint's own kernel, the same on every release (torch's own Meta
  kernel answers only under ``torch.fx.experimental._config.meta_nonzero_assume_all_nonzero``,
  which torch 2.6 does not have).

A kernel that cannot be put in place raises ``AuditPatchError``: the audit then says that it
could not run on this torch (the stage is ``inconclusive``), never that it found nothing.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

_NAMESPACE = "aten"
_KEY = "Meta"


class AuditPatchError(RuntimeError):
    """A stand-in kernel of the audit could not be registered on this torch."""


@functools.cache
def _impl_takes_allow_override() -> bool:
    return "allow_override" in inspect.signature(torch.library.Library.impl).parameters


@contextmanager
def meta_kernels(kernels: dict[str, Callable[..., Any]]) -> Iterator[None]:
    """While active, each ``op name → kernel`` of ``kernels`` is the op's Meta kernel; torch's
    own kernels are back afterwards."""
    library = torch.library.Library(_NAMESPACE, "IMPL")
    python_kernels: set[str] = getattr(torch.library, "_impls", set())
    displaced: set[str] = set()
    try:
        for op, kernel in kernels.items():
            key = f"{_NAMESPACE}/{op}/{_KEY}"
            if key in python_kernels:
                displaced.add(key)
            try:
                _register(library, op, kernel, key, python_kernels)
            except Exception as exc:  # noqa: BLE001 - whatever this torch says, the audit cannot run
                raise AuditPatchError(
                    f"could not register the audit's Meta kernel for aten.{op} on torch {torch.__version__}: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
        yield
    finally:
        library._destroy()
        # The library's finalizer takes its entries out of torch's record once more when it is
        # collected: it must find none, or torch's own kernels would lose theirs.
        library._op_impls.clear()
        python_kernels |= displaced


def _register(
    library: torch.library.Library, op: str, kernel: Callable[..., Any], key: str, python_kernels: set[str]
) -> None:
    if _impl_takes_allow_override():
        library.impl(op, kernel, _KEY, allow_override=True)
        return
    # No allow_override (torch 2.6, 2.7): the refusal is this record alone; the dispatcher overrides.
    python_kernels.discard(key)
    library.impl(op, kernel, _KEY)


def nonzero_all_true(tensor: torch.Tensor) -> torch.Tensor:
    """``nonzero`` of a meta tensor as if every element were non-zero: ``(numel, dim)`` indices."""
    return torch.empty_strided(
        (tensor.numel(), tensor.dim()), (1, tensor.numel()), dtype=torch.long, device=tensor.device
    )
