"""Iterating a value that is None in some capture modes: ``for x in forward_batch.mm_inputs:``,
``enumerate(forward_batch.extend_seq_lens_cpu)`` or ``any(... for p in lens)`` raises in the
modes where what is iterated is None (``compile_branches.py`` ends the walk there,
``raising_blocks.py`` takes the block as raising)."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

Modes = frozenset[str]


# Builtins that iterate what they are handed at once: ``enumerate(None)`` raises as ``for x in
# None`` does (``zip`` iterates each of its arguments; ``max(None, 1)`` raises too).
ITERATING_BUILTINS = frozenset({
    "enumerate", "zip", "iter", "list", "tuple", "sorted", "reversed", "set", "frozenset", "all", "any", "sum",
    "max", "min",
})


def raising_modes(
    iterable: cst.BaseExpression,
    builtin: Callable[[cst.BaseExpression], str | None],
    none: Callable[[cst.BaseExpression], Modes | None],
) -> Modes:
    """The modes in which iterating ``iterable`` raises: it is None (``none``), or it is a call
    of an iterating builtin (``builtin``: the builtin a callee is, where the file does not
    rebind its name) handed, positionally, something that raises or is None."""
    raising = none(iterable) or frozenset()
    func = iterable.func if isinstance(iterable, cst.Call) else None
    if isinstance(func, cst.Name) and func.value in ITERATING_BUILTINS and builtin(func) is not None:
        for arg in iterable.args:
            if arg.keyword is None and not arg.star:
                raising |= raising_modes(arg.value, builtin, none)
    return raising
