"""What a test is while a framework's graph runner captures, where the framework says so.

sglang's graph runners capture a batch they build themselves, in a decode-like forward mode and
with no multimodal inputs, so ``forward_batch.contains_mm_inputs()`` or
``forward_batch.forward_mode.is_mixed()`` is false in every capture: the branch under it is code
the capture never records (the prefill and multimodal paths of a model's ``forward``). The calls
are data (``capture-false-calls`` in the presets and ``[tool.graphlint]``; ``capture-true-calls``
for the opposite, sglang's ``get_is_capture_mode()``): dotted globs matched against the call as
written (its head resolved through the file's imports, as ``qualify`` does), and only a call
with no arguments counts (``is_extend_or_draft_extend_or_mixed(True)`` may be true).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

import libcst as cst

from graphlint.checks.presets import glob_pattern


def value_when_captured(
    test: cst.BaseExpression,
    qualify: Callable[[cst.BaseExpression], str | None],
    false_calls: tuple[str, ...],
    true_calls: tuple[str, ...] = (),
) -> bool | None:
    """``test``'s truth while a capture runs: False for a listed false call, True for a listed
    true call, through ``not``, ``and`` and ``or``; None where it depends on something else."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = value_when_captured(test.expression, qualify, false_calls, true_calls)
        return None if inner is None else not inner
    if isinstance(test, cst.Call):
        name = qualify(test.func) if not test.args else None
        if name is None:
            return None
        if any(p.match(name) for p in _patterns(false_calls)):
            return False
        return True if any(p.match(name) for p in _patterns(true_calls)) else None
    if isinstance(test, cst.BooleanOperation):
        left = value_when_captured(test.left, qualify, false_calls, true_calls)
        right = value_when_captured(test.right, qualify, false_calls, true_calls)
        decisive = isinstance(test.operator, cst.Or)  # the value that decides the chain
        if decisive in (left, right):
            return decisive
        return left if left is not None and left == right else None
    return None


@cache
def _patterns(globs: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(glob_pattern(glob) for glob in globs)
