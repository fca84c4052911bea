"""What a test is while a framework's graph runner captures, where the framework says so.

sglang's graph runners capture a batch they build themselves, in a decode-like forward mode and
with no multimodal inputs, so ``forward_batch.contains_mm_inputs()`` or
``forward_batch.forward_mode.is_mixed()`` is false in every capture: the branch under it is code
the capture never records (the prefill and multimodal paths of a model's ``forward``). The calls
are data (``capture-false-calls`` in the presets and ``[tool.graphlint]``; ``capture-true-calls``
for the opposite, sglang's ``get_is_capture_mode()``): dotted globs matched against the call as
written (its head resolved through the file's imports, as ``qualify`` does), and only a call
with no arguments counts (``is_extend_or_draft_extend_or_mixed(True)`` may be true). Some calls
are true in every capture whatever the framework (``torch.cuda.is_current_stream_capturing()``:
``apis.CAPTURE_TRUE_CALLS``).

A local name is read through its bindings (``local``): sglang's Ernie 4.5 VL MoE layer binds
``capturing = torch.cuda.is_current_stream_capturing()``, then ``all_visual = any_visual = False``
in the branch ``if mask is not None and not capturing:`` leaves to a capture, and tests ``elif
any_visual:``. Where every binding of the name in the function is a plain ``name = value`` and
those a capture can run (not in an uncaptured branch) all give the same known value, the name
has that value in every capture (``CaptureLocals``). So has a module's name, read in a function
that does not bind it, where the module's top level binds it so (``_is_hip = is_hip()``, then
``_use_aiter = get_bool_env_var("SGLANG_USE_AITER") and _is_hip``, with ``is_hip`` among the
capture's false calls): the module ran before any capture.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

import libcst as cst

from graphlint.checks.presets import glob_pattern
from graphlint.checks.syntax import children, preorder


def value_when_captured(
    test: cst.BaseExpression,
    qualify: Callable[[cst.BaseExpression], str | None],
    false_calls: tuple[str, ...],
    true_calls: tuple[str, ...] = (),
    local: Callable[[str], bool | None] = lambda name: None,
) -> bool | None:
    """``test``'s truth while a capture runs: False for a listed false call, True for a listed
    true call, ``True`` / ``False``, a local name's known value (``local``), through ``not``,
    ``and`` and ``or``; None where it depends on something else."""
    if isinstance(test, cst.Name):
        return {"True": True, "False": False}.get(test.value, local(test.value))
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = value_when_captured(test.expression, qualify, false_calls, true_calls, local)
        return None if inner is None else not inner
    if isinstance(test, cst.Call):
        name = qualify(test.func) if not test.args else None
        if name is None:
            return None
        if any(p.match(name) for p in _patterns(false_calls)):
            return False
        return True if any(p.match(name) for p in _patterns(true_calls)) else None
    if isinstance(test, cst.BooleanOperation):
        left = value_when_captured(test.left, qualify, false_calls, true_calls, local)
        right = value_when_captured(test.right, qualify, false_calls, true_calls, local)
        decisive = isinstance(test.operator, cst.Or)  # the value that decides the chain
        if decisive in (left, right):
            return decisive
        return left if left is not None and left == right else None
    return None


# A binding the walk does not record (a parameter, ``x += 1``, a loop target, ``global x``):
# counted so that the name is never known.
_UNRECORDED = 1 << 20


class CaptureLocals:
    """The bindings of one function's local names that a capture can run, recorded as the walk
    meets them (``record``), and what a name is known to be in every capture (``value``)."""

    def __init__(self, function: cst.FunctionDef | cst.Module) -> None:
        self.function = function
        self._counts: dict[str, int] | None = None  # every binding in the function, counted once asked
        self.seen: dict[str, int] = {}
        self.values: dict[str, list[bool | None]] = {}

    def record(self, name: str, value: bool | None, captured: bool) -> None:
        """A plain ``name = ...`` the walk met: ``value`` what it binds in a capture (None:
        unknown), ``captured`` False in a branch no capture takes."""
        self.seen[name] = self.seen.get(name, 0) + 1
        if captured:
            self.values.setdefault(name, []).append(value)

    def value(self, name: str) -> bool | None:
        values = set(self.values.get(name, [None]))
        if len(values) != 1 or None in values:
            return None
        if self._counts_of().get(name) != self.seen.get(name):  # a binding not met yet, or not plain
            return None
        return values.pop()

    def binds(self, name: str) -> bool:
        return name in self._counts_of()

    def _counts_of(self) -> dict[str, int]:
        if self._counts is None:  # counted only once a name may be known
            self._counts = _binding_counts(self.function)
        return self._counts


def _binding_counts(function: cst.FunctionDef | cst.Module) -> dict[str, int]:
    """How often each name is bound in ``function``'s own body (or a module's top level): plain
    ``name = ...`` once each, any other binding ``_UNRECORDED`` (functions, classes and lambdas
    nested in it have scopes of their own, but a ``nonlocal`` in a nested function rebinds the
    name here, and a ``:=`` in a comprehension binds it here; a module's name that a ``global``
    statement anywhere in it may rebind is never known)."""
    counts: dict[str, int] = {}

    def add(target: cst.CSTNode, amount: int) -> None:
        for node in preorder(target):
            if isinstance(node, cst.Name):
                counts[node.value] = counts.get(node.value, 0) + amount

    if isinstance(function, cst.Module):
        for node in preorder(function):
            if isinstance(node, cst.Global):
                for item in node.names:
                    add(item.name, _UNRECORDED)
        stack: list[cst.CSTNode] = list(function.body)
    else:
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            add(param.name, _UNRECORDED)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                add(star.name, _UNRECORDED)
        stack = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            add(node.name, _UNRECORDED)
            for inner in preorder(node):  # a nested function may rebind a name through ``nonlocal``
                if isinstance(inner, cst.Nonlocal):
                    for item in inner.names:
                        add(item.name, _UNRECORDED)
            continue
        if isinstance(node, cst.Lambda):  # comprehensions are walked: a ``:=`` in one binds here
            continue
        if isinstance(node, cst.Assign):
            for target in node.targets:
                add(target.target, 1 if isinstance(target.target, cst.Name) else _UNRECORDED)
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            add(node.target, 1 if isinstance(node.target, cst.Name) else _UNRECORDED)
        elif isinstance(node, (cst.AugAssign, cst.For, cst.NamedExpr)):
            add(node.target, _UNRECORDED)
        elif isinstance(node, cst.AsName):
            add(node.name, _UNRECORDED)
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            for item in node.names:
                add(item.name, _UNRECORDED)
        elif isinstance(node, cst.Del):
            add(node.target, _UNRECORDED)
        stack.extend(children(node))
    return counts


@cache
def _patterns(globs: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(glob_pattern(glob) for glob in globs)
