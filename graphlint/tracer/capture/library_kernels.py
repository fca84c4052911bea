"""Python kernels registered with ``torch.library.Library.impl``, kept so the audit can look inside.

An op defined with ``Library.define`` and given a Python kernel with ``Library.impl`` (or the
``torch.library.impl`` decorator, which calls it) is one opaque node of the aten graph, like a
``custom_op``; but torch keeps that kernel only in its dispatcher, which hands no Python function
back. graphlint wraps ``Library.impl`` before the target's code is imported and keeps each
Python kernel by op and dispatch key. A kernel registered before that (by a module imported
earlier in the same process) stays unknown, and the op opaque.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

# The kernel a call on a device runs, best first: the NPU's (torch_npu registers as PrivateUse1),
# then CUDA's, then one for every backend, then the CPU's. Meta / fake kernels only give shapes.
_DEVICE_KEYS = ("PrivateUse1", "CUDA", "CompositeExplicitAutograd", "CPU")
_KERNELS: dict[tuple[str, str], dict[str, Callable[..., Any]]] = {}  # (ns::op, overload) → key → kernel
_MARK = "_graphlint_keeps_kernels"


def keep_library_kernels() -> None:
    """Wrap ``torch.library.Library.impl`` (once per process) so that it also keeps the kernel.

    The wrapper passes every argument on unchanged, so registration behaves as it did."""
    original = torch.library.Library.impl
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def impl(self: Any, op_name: Any, fn: Any, dispatch_key: str = "", *args: Any, **kwargs: Any) -> Any:
        registered = original(self, op_name, fn, dispatch_key, *args, **kwargs)
        if callable(fn) and not kwargs.get("with_keyset") and dispatch_key in _DEVICE_KEYS:
            op = _op_key(getattr(self, "ns", ""), op_name)
            if op is not None:
                _KERNELS.setdefault(op, {})[dispatch_key] = fn
        return registered

    setattr(impl, _MARK, True)
    torch.library.Library.impl = impl  # type: ignore[method-assign]


def library_kernel(op: torch._ops.OpOverload) -> Callable[..., Any] | None:
    """The Python kernel ``Library.impl`` gave ``op`` for a device, or None."""
    kernels = _KERNELS.get((op._schema.name, op._overloadname)) or {}
    return next((kernels[key] for key in _DEVICE_KEYS if key in kernels), None)


def _op_key(namespace: str, op_name: Any) -> tuple[str, str] | None:
    """(``ns::op``, overload) of what ``Library.impl`` was given: ``"op"``, ``"op.overload"``,
    ``"ns::op"`` or an ``OpOverload``."""
    if isinstance(op_name, torch._ops.OpOverload):
        return op_name._schema.name, op_name._overloadname
    if not isinstance(op_name, str):
        return None
    qualified = op_name if "::" in op_name else f"{namespace}::{op_name}"
    name, _, overload = qualified.partition(".")
    return name, overload or "default"  # torch names the overload without a name "default"
