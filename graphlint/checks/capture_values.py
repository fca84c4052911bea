"""What a test is while a framework's graph runner captures, where the framework says so.

sglang's graph runners capture a batch they build themselves, in a decode-like forward mode, with
no multimodal inputs and asking no logprobs, so ``forward_batch.contains_mm_inputs()``,
``forward_batch.forward_mode.is_mixed()`` or ``forward_batch.return_logprob`` is false in every
capture: the branch under it is code the capture never records (the prefill, logprob and
multimodal paths of a model's ``forward``). The knowledge is data (``ExtractOptions``, from the
presets and ``[tool.graphlint]``):

- ``capture-false-calls`` / ``capture-true-calls``: calls, as dotted globs matched against the
  call as written (its head resolved through the file's imports, as ``qualify`` does); only a
  call with no arguments counts (``is_extend_or_draft_extend_or_mixed(True)`` may be true) unless
  the entry ends in ``(...)``;
- ``capture-false-attributes`` / ``capture-none-attributes``: attributes read, False / None in
  every capture (``x is None`` is decided only for the None ones);
- ``capture-modes`` and ``capture-mode-calls``: the modes a capture runs in and, per call, the
  modes it is true in. A test is decided per mode: its value is the set of modes (of those still
  possible where it stands) in which it is true, so ``is_decode_or_idle() or is_target_verify()
  or is_draft_extend_v2()`` is true in every capture although none alone is.

A framework that states no modes has one, ``ANY_CAPTURE``: a test is then true in it or not.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

import libcst as cst

from graphlint.checks.facts import ExtractOptions
from graphlint.checks.presets import glob_pattern

Modes = frozenset[str]
ANY_CAPTURE: Modes = frozenset({""})  # the one mode of a framework that names none
_ANY_ARGUMENTS = "(...)"


def capture_modes(options: ExtractOptions) -> Modes:
    """Every mode a capture may run in."""
    return frozenset(options.capture_modes) or ANY_CAPTURE


def knows_captures(options: ExtractOptions) -> bool:
    """Whether ``options`` decide any test under capture (else nothing here is asked)."""
    return bool(
        options.capture_false_calls or options.capture_true_calls or options.capture_false_attributes
        or options.capture_none_attributes or (options.capture_modes and options.capture_mode_calls)
    )


def true_modes(
    test: cst.BaseExpression,
    qualify: Callable[[cst.BaseExpression], str | None],
    options: ExtractOptions,
    modes: Modes,
) -> Modes | None:
    """The modes of ``modes`` in which ``test`` is true while a capture runs, through ``not``,
    ``and``, ``or`` and ``is (not) None``; None where it depends on something else."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = true_modes(test.expression, qualify, options, modes)
        return None if inner is None else modes - inner
    if isinstance(test, cst.BooleanOperation):
        left = true_modes(test.left, qualify, options, modes)
        right = true_modes(test.right, qualify, options, modes)
        if isinstance(test.operator, cst.Or):
            if modes in (left, right):  # true in every mode, whatever the other side
                return modes
            return None if left is None or right is None else left | right
        if frozenset() in (left, right):
            return frozenset()
        return None if left is None or right is None else left & right
    if isinstance(test, cst.Call):
        return _call_modes(test, qualify, options, modes)
    if isinstance(test, cst.Attribute):
        name = qualify(test)
        if name is not None and _matches(name, options.capture_false_attributes + options.capture_none_attributes):
            return frozenset()
        return None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        operator = test.comparisons[0].operator
        if not (isinstance(operator, (cst.Is, cst.IsNot)) and _is_none(test.comparisons[0].comparator)):
            return None
        name = qualify(test.left) if isinstance(test.left, cst.Attribute) else None
        if name is None or not _matches(name, options.capture_none_attributes):
            return None
        return modes if isinstance(operator, cst.Is) else frozenset()
    return None


def _call_modes(
    call: cst.Call, qualify: Callable[[cst.BaseExpression], str | None], options: ExtractOptions, modes: Modes
) -> Modes | None:
    name = qualify(call.func)
    if name is None:
        return None
    if _matches(name, options.capture_false_calls, call.args):
        return frozenset()
    if _matches(name, options.capture_true_calls, call.args):
        return modes
    if options.capture_modes and not call.args:
        for pattern, listed in _mode_patterns(options.capture_mode_calls):
            if pattern.match(name):
                return modes & listed
    return None


def _matches(name: str, globs: tuple[str, ...], args: tuple[cst.Arg, ...] | None = None) -> bool:
    """Whether ``name`` is one of ``globs``; for a call with ``args``, an entry must end in
    ``(...)`` to take it."""
    return any(pattern.match(name) for any_args, pattern in _patterns(globs) if any_args or not args)


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


@cache
def _patterns(globs: tuple[str, ...]) -> tuple[tuple[bool, re.Pattern[str]], ...]:
    return tuple(
        (glob.endswith(_ANY_ARGUMENTS), glob_pattern(glob.removesuffix(_ANY_ARGUMENTS))) for glob in globs
    )


@cache
def _mode_patterns(calls: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[tuple[re.Pattern[str], Modes], ...]:
    return tuple((glob_pattern(glob), frozenset(listed)) for glob, listed in calls)
