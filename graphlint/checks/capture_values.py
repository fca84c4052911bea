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
  every capture (``x is None`` is decided only for the None ones), and never None: those of
  ``capture-device-attributes`` (``capture_devices.py``); per mode, where the runners differ,
  ``capture-mode-none-attributes`` / ``capture-mode-true-attributes`` (``mode_attributes.py``).
  An attribute read off a call's result is named with the callee and ``()``
  (``get_attn_backend().forward_metadata.seq_lens``);
- ``capture-modes`` and ``capture-mode-calls``: the modes a capture runs in and, per call, the
  modes it is true in. A test is decided per mode: its value is the set of modes (of those still
  possible where it stands) in which it is true, so ``is_decode_or_idle() or is_target_verify()
  or is_draft_extend_v2()`` is true in every capture although none alone is;
- ``capture-call-results``: calls → the values they may return in a capture, so ``method ==
  AttnForwardMethod.MHA_NPU`` (the call, or a name bound to it) is false where ``MHA_NPU`` is
  another member of the class of those values (sglang's DeepSeek attention handlers);
- ``capture-false-tests``: functions (as their file names them) → comparisons, as written, false
  in every capture there (DeepSeek's ``hidden_states.shape[0] == 0``: no capture batch is empty).

A framework that states no modes has one, ``ANY_CAPTURE``: a test is then true in it or not.
Some calls are true in every capture whatever the framework (``torch.cuda.is_current_stream_capturing()``:
``apis.CAPTURE_TRUE_CALLS``), so a test is always asked.

A name is read through its bindings (``local``): sglang's Ernie 4.5 VL MoE layer binds
``capturing = torch.cuda.is_current_stream_capturing()``, then ``all_visual = any_visual = False``
in the branch ``if mask is not None and not capturing:`` leaves to a capture, and tests ``elif
any_visual:``. Where every binding of the name in the function is a plain ``name = value`` and,
in each mode, those a capture can run there agree on a known value, the name has that value
(``CaptureLocals``). So has a module's name, read in a function that does not bind it, where the
module's top level binds it so (``_is_hip = is_hip()``, then ``_use_aiter =
get_bool_env_var("SGLANG_USE_AITER") and _is_hip``, with ``is_hip`` among the capture's false
calls): the module ran before any capture.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import libcst as cst

from graphlint.checks import apis, mode_attributes
from graphlint.checks.binding_counts import UNRECORDED, BindingCounts, binding_counts
from graphlint.checks.facts import ExtractOptions
from graphlint.checks.member_values import equal_in
from graphlint.checks.presets import glob_pattern
from graphlint.checks.syntax import attribute_name

Modes = frozenset[str]
ANY_CAPTURE: Modes = frozenset({""})  # the one mode of a framework that names none
_EMPTY_MODULE = cst.Module(body=[])
_ANY_ARGUMENTS = "(...)"


def capture_modes(options: ExtractOptions) -> Modes:
    """Every mode a capture may run in."""
    return frozenset(options.capture_modes) or ANY_CAPTURE


def modes_may_differ(options: ExtractOptions, text: str) -> bool:
    """Whether a fact of a file (``text``) may differ between capture modes. Only the per-mode
    tables (``capture-mode-calls``, ``capture-mode-none-attributes`` / ``-true-attributes``) tell
    modes apart, matched against qualified names whose last part the file writes (an import
    renames a head only); bindings and narrowed modes carry a difference on, never start one. So
    a file that writes the last part of no entry answers every fact alike in every mode."""
    if len(capture_modes(options)) < 2:
        return False
    tables = (options.capture_mode_calls, options.capture_mode_none_attributes, options.capture_mode_true_attributes)
    for glob in (glob for table in tables for glob, _ in table):
        last = glob.removesuffix(_ANY_ARGUMENTS).rpartition(".")[2]
        if "*" in last or "?" in last or last in text:
            return True
    return False


@dataclass(frozen=True)
class Binding:
    """One plain ``name = value`` a capture can run: the modes it runs in, and the modes its value
    is true in and is None in, and the values it may be (``capture-call-results``; None: unknown)."""

    runs_in: Modes
    true_in: Modes | None
    none_in: Modes | None
    results: frozenset[str] | None = None
    device_in: Modes | None = None  # … is a tensor on the capture's device in (``capture-device-attributes``)


# What a binding tells of a name: the modes (of those it runs in) in which the name has a property.
Fact = Callable[[Binding], "Modes | None"]


def truth(binding: Binding) -> Modes | None:
    return binding.true_in


def noneness(binding: Binding) -> Modes | None:
    return binding.none_in


# What a name is in each mode, where its bindings say (``CaptureLocals``, through the scopes).
Local = Callable[[str, Modes, Fact], "Modes | None"]


def true_modes(
    test: cst.BaseExpression,
    qualify: Callable[[cst.BaseExpression], str | None],
    options: ExtractOptions,
    modes: Modes,
    local: Local | None = None,
    false_tests: frozenset[str] = frozenset(),
) -> Modes | None:
    """The modes of ``modes`` in which ``test`` is true while a capture runs, through ``not``,
    ``and``, ``or``, ``bool(...)``, ``is (not) None``, ``True`` / ``False``, a name's known value
    (``local``), ``==`` / ``!=`` of what a call returns (``capture-call-results``) and a member of
    the same class, and the comparisons ``capture-false-tests`` names for the function (``false_tests``,
    their texts without whitespace); None where it depends on something else."""
    if false_tests and isinstance(test, cst.Comparison) and test_text(test) in false_tests:
        return frozenset()
    if isinstance(test, cst.Name):
        if test.value in ("True", "False"):
            return modes if test.value == "True" else frozenset()
        return local(test.value, modes, truth) if local is not None else None
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = true_modes(test.expression, qualify, options, modes, local, false_tests)
        return None if inner is None else modes - inner
    if isinstance(test, cst.BooleanOperation):
        left = true_modes(test.left, qualify, options, modes, local, false_tests)
        right = true_modes(test.right, qualify, options, modes, local, false_tests)
        if isinstance(test.operator, cst.Or):
            if modes in (left, right):  # true in every mode, whatever the other side
                return modes
            return None if left is None or right is None else left | right
        if frozenset() in (left, right):
            return frozenset()
        return None if left is None or right is None else left & right
    if isinstance(test, cst.Call):
        argument = test.args[0] if len(test.args) == 1 else None
        if qualify(test.func) == "bool" and argument is not None and argument.keyword is None and not argument.star:
            return true_modes(argument.value, qualify, options, modes, local, false_tests)
        return _call_modes(test, qualify, options, modes)
    if isinstance(test, cst.Attribute):
        name = attribute_name(test, qualify)
        if name is None:
            return None
        if matches(name, options.capture_false_attributes + options.capture_none_attributes):
            return frozenset()
        return mode_attributes.true_in(name, options, modes)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
        if isinstance(operator, (cst.Is, cst.IsNot)) and _is_none(right):
            is_none = none_modes(test.left, qualify, options, modes)
            return None if is_none is None else is_none if isinstance(operator, cst.Is) else modes - is_none
        if isinstance(operator, (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot)):
            equal = _equal_modes(test.left, right, qualify, options, modes, local)
            if equal is None:
                equal = _equal_modes(right, test.left, qualify, options, modes, local)
            return None if equal is None else equal if isinstance(operator, (cst.Equal, cst.Is)) else modes - equal
    return None


def test_text(test: cst.BaseExpression) -> str:
    """A test as written, without its whitespace (how ``capture-false-tests`` names it)."""
    return "".join(_EMPTY_MODULE.code_for_node(test).split())


def false_tests(options: ExtractOptions, function: str) -> frozenset[str]:
    """The comparisons ``capture-false-tests`` says are false in every capture in ``function``
    (as its file names it), without their whitespace."""
    found = [tests for glob, tests in options.capture_false_tests if matches(function, (glob,))]
    return frozenset("".join(test.split()) for tests in found for test in tests)


def call_results(
    expr: cst.BaseExpression, qualify: Callable[[cst.BaseExpression], str | None], options: ExtractOptions
) -> frozenset[str] | None:
    """The values ``expr``, a call of ``capture-call-results``, may return while a capture runs
    (dotted names: sglang's ``AttnForwardMethod.MLA_NPU``); None for any other expression."""
    if not (isinstance(expr, cst.Call) and options.capture_call_results):
        return None
    name = qualify(expr.func)
    if name is None:
        return None
    found = [listed for glob, listed in options.capture_call_results if matches(name, (glob,), expr.args)]
    return frozenset().union(*found) if found else None


def _equal_modes(
    source: cst.BaseExpression,
    member: cst.BaseExpression,
    qualify: Callable[[cst.BaseExpression], str | None],
    options: ExtractOptions,
    modes: Modes,
    local: Local | None,
) -> Modes | None:
    """The modes in which ``source`` (a call of ``capture-call-results``, or a name bound to one)
    equals ``member`` (a dotted name)."""
    name = qualify(member) if isinstance(member, cst.Attribute) else None
    if name is None:
        return None
    if isinstance(source, cst.Name):
        if local is None:
            return None
        return local(source.value, modes, lambda binding: equal_in(binding.results, name, binding.runs_in))
    return equal_in(call_results(source, qualify, options), name, modes)


def none_modes(
    expr: cst.BaseExpression,
    qualify: Callable[[cst.BaseExpression], str | None],
    options: ExtractOptions,
    modes: Modes,
    local: Local | None = None,
) -> Modes | None:
    """The modes of ``modes`` in which ``expr`` is None while a capture runs: an attribute of
    ``capture-none-attributes`` (in all; of ``capture-device-attributes``: in none), or per mode
    (``mode_attributes.py``), a name bound to one (``local``); None where unknown."""
    if isinstance(expr, cst.Name):
        return local(expr.value, modes, noneness) if local is not None else None
    if isinstance(expr, cst.Attribute):
        name = attribute_name(expr, qualify)
        if name is None:
            return None
        if matches(name, options.capture_none_attributes):
            return modes
        if matches(name, options.capture_device_attributes):
            return frozenset()
        return mode_attributes.none_in(name, options, modes)
    return None


def _call_modes(
    call: cst.Call, qualify: Callable[[cst.BaseExpression], str | None], options: ExtractOptions, modes: Modes
) -> Modes | None:
    name = qualify(call.func)
    if name is None:
        return None
    if matches(name, options.capture_false_calls, call.args):
        return frozenset()
    if matches(name, options.capture_true_calls + apis.CAPTURE_TRUE_CALLS, call.args):
        return modes
    if options.capture_modes and not call.args:
        for pattern, listed in _mode_patterns(options.capture_mode_calls):
            if pattern.match(name):
                return modes & listed
    return None


def matches(name: str, globs: tuple[str, ...], args: tuple[cst.Arg, ...] | None = None) -> bool:
    """Whether ``name`` is one of ``globs``; for a call with ``args``, an entry must end in
    ``(...)`` to take it."""
    return any(pattern.match(name) for any_args, pattern in _patterns(globs) if any_args or not args)


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


class CaptureLocals:
    """The bindings of one function's (or a module's top level's) names that a capture can run,
    recorded as the walk meets them (``record``), and what a name is known to be (``value``)."""

    def __init__(self, function: cst.FunctionDef | cst.Module, counted: dict[int, BindingCounts] | None = None) -> None:
        self.function = function
        self._counts: BindingCounts | None = None  # every binding in the function, counted once asked
        # each function's counts by id(), kept while the function is (``kept_answers.py``)
        self._counted = counted if counted is not None else {}
        self.seen: dict[str, int] = {}
        self.values: dict[str, list[Binding]] = {}  # per name, each binding a capture can run

    def record(self, name: str, binding: Binding) -> None:
        """A plain ``name = ...`` the walk met (in no mode: a branch no capture takes)."""
        self.seen[name] = self.seen.get(name, 0) + 1
        if binding.runs_in:
            self.values.setdefault(name, []).append(binding)

    def tentative(self) -> Callable[[], None]:
        """What undoes the bindings recorded from now on (a scan ahead of the walk records its
        own: ``raising_blocks.py``)."""
        seen, values = dict(self.seen), {name: list(bindings) for name, bindings in self.values.items()}

        def undo() -> None:
            self.seen, self.values = seen, values

        return undo

    def value(self, name: str, modes: Modes, fact: Fact = truth) -> Modes | None:
        """The modes of ``modes`` in which the name has the property ``fact`` reads of its
        bindings (is true, is None, ...); None unless in each of them the bindings that run there
        agree, and every binding of the name is a plain one the walk met."""
        bindings = [(binding.runs_in, fact(binding)) for binding in self.values.get(name, ())]
        if not bindings or any(known is None for _, known in bindings):
            return None
        holds: set[str] = set()
        for mode in modes:
            agreed = {mode in known for runs_in, known in bindings if mode in runs_in}  # type: ignore[operator]
            if len(agreed) != 1:
                return None
            if agreed.pop():
                holds.add(mode)
        if self._counts_of().get(name) != self.seen.get(name):  # a binding not met yet, or not plain
            return None
        return frozenset(holds)

    def results(self, name: str) -> frozenset[str] | None:
        """The values (``capture-call-results``) the name may be where a capture runs: those of
        its bindings a capture runs, where each is a plain one the walk met and knows."""
        bindings = self.values.get(name, ())
        if not bindings or any(b.results is None for b in bindings) or self._counts_of().get(name) != self.seen.get(name):
            return None
        return frozenset().union(*(b.results for b in bindings if b.results is not None))

    def binds(self, name: str) -> bool:
        return name in self._counts_of()

    def bound_once(self, name: str, plain: bool) -> bool:
        """Whether one binding of the name, plain (``name = ...``) or not (``a, name = ...``), is
        its only one in the function; ``del name`` aside (reading it after raises)."""
        found = self._binding_counts()
        return found.counts.get(name, 0) - found.deleted.get(name, 0) == (1 if plain else UNRECORDED)

    def one_device(self, name: str, before: cst.CSTNode | None = None) -> bool:
        """Whether the name holds tensors on one device wherever it is read (where ``before``,
        a node no loop holds, reads it: up to there): one binding (plain or not, as
        ``bound_once``) and others that keep the tensor's device only (``h = h.view(-1, d)``,
        ``h *= s``: ``binding_counts.py``)."""
        return self._binding_counts().origins_before(name, before) in (1, UNRECORDED)

    def _counts_of(self) -> dict[str, int]:
        return self._binding_counts().counts

    def _binding_counts(self) -> BindingCounts:
        if self._counts is None:  # counted only once a name may be known
            self._counts = self._counted.get(id(self.function))
        if self._counts is None:
            self._counts = self._counted[id(self.function)] = binding_counts(self.function)
        return self._counts


@cache
def _patterns(globs: tuple[str, ...]) -> tuple[tuple[bool, re.Pattern[str]], ...]:
    return tuple(
        (glob.endswith(_ANY_ARGUMENTS), glob_pattern(glob.removesuffix(_ANY_ARGUMENTS))) for glob in globs
    )


@cache
def _mode_patterns(calls: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[tuple[re.Pattern[str], Modes], ...]:
    return tuple((glob_pattern(glob), frozenset(listed)) for glob, listed in calls)
