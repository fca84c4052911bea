"""Hide an offline torchair session from the process between its uses, and show it again.

One compile feeds the dynamo, aot and torchair stages (``graphlint/tracer/one_compile.py``), so
torchair is imported before dynamo traces the user's code. Imported, torchair changes torch: its
import hook answers ``torch_npu``, it replaces torch attributes (``torch.distributed.all_reduce``
and the other collectives), and its backend, once made, swaps torch's decompositions and Python
kernels of some aten ops for the NPU's (``add_npu_patch``: meta functions of dropout and batch
norm, implicit decompositions turned off). Today's separate stages never let dynamo or
AOTAutograd see any of that, so between torchair's backend calls all of it is put back as it was
before the import, and shown again around each call and the torchair stage's own run.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from graphlint.tracer.torchair import offline

_KERNEL_TABLES = ("py_kernels", "python_key_table", "functorch_table")


def _overloads() -> Iterator[torch._ops.OpOverload]:
    """Every operator overload a decomposition table names or ``torch.ops`` has materialised."""
    from torch._decomp import global_decomposition_table

    seen: set[int] = set()
    for table in global_decomposition_table.values():
        for op in list(table):
            if isinstance(op, torch._ops.OpOverload) and id(op) not in seen:
                seen.add(id(op))
                yield op
    for namespace in list(vars(torch.ops).values()):
        if not isinstance(namespace, torch._ops._OpNamespace):
            continue
        for packet in list(vars(namespace).values()):
            if isinstance(packet, torch._ops.OpOverloadPacket):
                for op in list(vars(packet).values()):
                    if isinstance(op, torch._ops.OpOverload) and id(op) not in seen:
                        seen.add(id(op))
                        yield op


def _kernels_of(op: torch._ops.OpOverload) -> tuple[dict[Any, Any], ...]:
    return tuple(dict(getattr(op, table)) for table in _KERNEL_TABLES)


class TorchairHiding:
    """What torch looked like before torchair's import (taken at construction), and what
    torchair made of it while hidden."""

    def __init__(self) -> None:
        from torch._decomp import global_decomposition_table

        self._tables_before = {name: dict(table) for name, table in global_decomposition_table.items()}
        self._kernels_before = {op: _kernels_of(op) for op in _overloads()}
        self._attributes = offline._TorchAttributeSnapshot()
        self._hidden: list[tuple[Any, ...]] | None = None  # how to show it again

    @contextmanager
    def hidden(self) -> Iterator[None]:
        """torchair hidden for the body (a no-op when it already is)."""
        if self._hidden is not None:
            yield
            return
        self.hide()
        try:
            yield
        finally:
            self.show()

    @contextmanager
    def shown(self) -> Iterator[None]:
        """torchair shown for the body (a no-op when it already is)."""
        if self._hidden is None:
            yield
            return
        self.show()
        try:
            yield
        finally:
            self.hide()

    def hide(self) -> None:
        from torch._decomp import global_decomposition_table

        undo: list[tuple[Any, ...]] = []
        for name, module in list(sys.modules.items()):
            if offline.belongs_to_torchair(name):
                undo.append(("module", name, module))
                del sys.modules[name]
        for finder in [f for f in sys.meta_path if isinstance(f, offline._OfflineFinder)]:
            undo.append(("finder", finder))
            sys.meta_path.remove(finder)
        undo += [("attribute", *change) for change in self._attributes.restore()]
        for name, table in global_decomposition_table.items():
            before = self._tables_before.get(name, {})
            for op, fn in list(table.items()):
                if before.get(op, _MISSING) is not fn:
                    undo.append(("decomposition", table, op, fn))
                    if op in before:
                        table[op] = before[op]
                    else:
                        del table[op]
            for op in [op for op in before if op not in table]:
                undo.append(("removed decomposition", table, op))
                table[op] = before[op]
        for op in _overloads():
            now = _kernels_of(op)
            before = self._kernels_before.get(op) or tuple(
                {key: kernel for key, kernel in table.items() if not offline._comes_from_torchair(kernel)}
                for table in now
            )
            if now != before:
                undo.append(("kernels", op, now))
                _set_kernels(op, before)
        _clear_fake_tensor_cache()
        self._hidden = undo

    def show(self) -> None:
        undo, self._hidden = self._hidden or [], None
        for change in reversed(undo):
            kind = change[0]
            if kind == "module":
                sys.modules[change[1]] = change[2]
            elif kind == "finder":
                sys.meta_path.insert(0, change[1])
            elif kind == "attribute":
                _, module, attr, value = change
                setattr(module, attr, value)
            elif kind == "decomposition":
                _, table, op, fn = change
                table[op] = fn
            elif kind == "removed decomposition":
                del change[1][change[2]]
            else:
                _set_kernels(change[1], change[2])
        _clear_fake_tensor_cache()


_MISSING = object()


def _set_kernels(op: torch._ops.OpOverload, tables: tuple[dict[Any, Any], ...]) -> None:
    for name, content in zip(_KERNEL_TABLES, tables):
        table = getattr(op, name)
        table.clear()
        table.update(content)
    op._dispatch_cache.clear()


def _clear_fake_tensor_cache() -> None:
    """Fake tensors cache the outputs of operators by their inputs' metadata; an output computed
    with torchair's meta functions must not answer dynamo's trace (torch 2.6 and later have the
    cache; feature-detected)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    cache = getattr(FakeTensorMode, "cache", None)
    if isinstance(cache, dict):
        cache.clear()

