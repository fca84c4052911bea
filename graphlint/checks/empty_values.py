"""Sequences that are empty in every capture, and the loops and tests they decide.

sglang's Whisper builds, for a batch that is not a decode one, ``mm_inputs_list =
forward_batch.mm_inputs if forward_batch.mm_inputs else []`` (empty: mm_inputs is None in every
capture batch), appends to ``features_to_encode = []`` only in ``for ... in
zip(mm_inputs_list, ...)``, and runs its audio encoder under ``if features_to_encode:``. A mixin
of the extractor's walk:

- what is empty in a mode: ``[]``, ``()``, ``{}``, ``list()`` / ``tuple()``, a conditional
  expression whose test a capture decides (``capture_values.py``) or whose both sides are empty,
  ``zip(...)`` of something empty, ``enumerate(x)`` / ``list(x)`` / ``sorted(x)`` ... of an empty
  ``x``, a comprehension whose first ``for`` iterates something empty, and a name bound once (plainly) in its function to such a value, not in a loop where it
  is read, and not read before that (but where it is bound) outside code no capture runs: a
  list appended to only in a loop over something empty is still empty;
- a ``for`` loop over what is empty runs its body in no such mode (its ``else`` still runs);
- ``if x:`` of such a name is false there, ``if not x:`` true.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from functools import cached_property
from typing import Any

import libcst as cst

from graphlint.checks.capture_values import Modes, matches
from graphlint.checks.facts import ExtractOptions
from graphlint.checks.kept_answers import KeptAnswers
from graphlint.checks.reparse import statement_pieces
from graphlint.checks.syntax import children

# Builtins whose result is empty when what they iterate is (``zip``: any of its arguments).
_EMPTY_OF_EMPTY = frozenset({"enumerate", "zip", "iter", "list", "tuple", "sorted", "reversed", "set", "frozenset"})
_READING_BUILTINS = _EMPTY_OF_EMPTY | {"len", "bool"}  # … and those that only read what they are handed


def _read_parts(expr: cst.BaseExpression, builtin: Callable[[cst.BaseExpression], str | None]) -> list[cst.BaseExpression]:
    """``expr``, iterated or tested, and the parts of it that are so too."""
    parts = [expr]
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        parts += _read_parts(expr.expression, builtin)
    elif isinstance(expr, cst.BooleanOperation):
        parts += _read_parts(expr.left, builtin) + _read_parts(expr.right, builtin)
    elif isinstance(expr, cst.Comparison) and all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in expr.comparisons):
        parts.append(expr.left)
    elif _zero_comparison(expr) is not None:  # ``len(x) != 0``
        parts += _read_parts(expr.left, builtin)  # type: ignore[attr-defined]
    elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and builtin(expr.func) in _READING_BUILTINS:
        for arg in expr.args:
            if arg.keyword is None and not arg.star:
                parts += _read_parts(arg.value, builtin)
    return parts


class EmptyValues:
    """The empty half of the extractor (it provides the scopes, ``capture_modes``, ``qualify``
    and ``_true_modes``)."""

    capture_modes: Modes
    options: ExtractOptions
    uncaptured: bool
    function_scope: Any
    tree: ast.Module
    text: str
    kept: KeptAnswers
    qualify: Callable[[cst.BaseExpression], str | None]
    uncaptured_blocks: set[int]  # id() of the blocks the walk met with no capture mode left
    _true_modes: Callable[[cst.BaseExpression, Modes], Modes | None]
    _set_capture_modes: Callable[[Modes], Callable[[], None]]

    def _builtin(self, func: cst.BaseExpression) -> str | None:
        """The builtin ``func`` names, where nothing in the file binds that name."""
        if not isinstance(func, cst.Name) or self.qualify(func) != func.value:
            return None
        return None if func.value in self.bound_names else func.value

    @cached_property
    def bound_names(self) -> frozenset[str]:
        """Every name the file binds anywhere (read from its ``ast``, once asked), gathered per
        top-level statement, whose names its text alone says: kept between texts of a buffer."""
        names: set[str] = set()
        kept = self.kept.piece_names
        for piece, statements in statement_pieces(self.text, self.tree):
            found = kept.get(piece)
            if found is None:
                found = kept[piece] = _bound_names(statements)
            names |= found
        return frozenset(names)

    def _empty_modes(self, expr: cst.BaseExpression, modes: Modes, at: cst.CSTNode) -> Modes:
        """The modes of ``modes`` in which ``expr``, read at ``at``, is known to be empty."""
        if isinstance(expr, (cst.List, cst.Tuple, cst.Dict)) and not expr.elements:
            return modes
        if isinstance(expr, cst.IfExp):
            taken = self._true_modes(expr.test, modes)
            body, orelse = self._empty_modes(expr.body, modes, at), self._empty_modes(expr.orelse, modes, at)
            return body & orelse if taken is None else (taken & body) | ((modes - taken) & orelse)
        if isinstance(expr, cst.Name):
            return self._empty_name(expr.value, modes, at)
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            return self._empty_modes(expr.for_in.iter, modes, at)  # its first ``for`` iterates nothing
        if not isinstance(expr, cst.Call) or any(arg.star for arg in expr.args):
            return frozenset()
        positional = [arg.value for arg in expr.args if arg.keyword is None]
        if self._empty_of_empty_call(expr.func):
            is_list = bool(positional) and self._is_list(positional[0])
            return self._empty_modes(positional[0], modes, at) if is_list else frozenset()
        builtin = self._builtin(expr.func)
        if builtin not in _EMPTY_OF_EMPTY:
            return frozenset()
        if not positional:
            return modes if builtin in ("list", "tuple", "zip") and not expr.args else frozenset()
        if builtin == "zip":
            empty: Modes = frozenset()
            for value in positional:
                empty |= self._empty_modes(value, modes, at)
            return empty
        return self._empty_modes(positional[0], modes, at)

    def _empty_of_empty_call(self, func: cst.BaseExpression) -> bool:
        """A call of one of ``empty-of-empty-calls``: empty where its first argument is an empty
        list (``flatten_nested_list(())`` is ``[()]``: the argument's kind is part of it)."""
        name = self.qualify(func)
        return name is not None and matches(name, self.options.empty_of_empty_calls, ())

    def _is_list(self, expr: cst.BaseExpression) -> bool:
        """A list display or comprehension, or ``list(...)`` / ``sorted(...)``."""
        if isinstance(expr, (cst.List, cst.ListComp)):
            return True
        return isinstance(expr, cst.Call) and self._builtin(expr.func) in ("list", "sorted")

    def _empty_name(self, name: str, modes: Modes, at: cst.CSTNode) -> Modes:
        """The modes of ``modes`` in which ``name``, read at ``at``, holds what its one binding a
        capture runs before ``at`` bound (the others lie in code no capture runs), known empty."""
        scope = self.function_scope
        bindings = scope.capture_locals
        empty = scope.empty.get(name)
        if empty is None or scope.kind != "function" or scope.loops or bindings is None:
            return frozenset()
        if not self._untouched_before(bindings.function, name, at):
            return frozenset()
        return modes & empty

    def _note_empty(self, scope: Any, name: str, value: cst.BaseExpression) -> None:
        """``name = value``: the modes in which it is bound to an empty sequence (a binding no
        capture runs changes nothing)."""
        if self.uncaptured:
            return
        empty = self._empty_modes(value, self.capture_modes, value)
        if empty:
            scope.empty[name] = empty
        else:
            scope.empty.pop(name, None)

    def _untouched_before(self, function: cst.CSTNode, name: str, at: cst.CSTNode) -> bool:
        """Whether ``name`` occurs in ``function`` before ``at`` (in source order) only as the
        target of one plain binding a capture may run, in a block no capture runs, or read where
        nothing can change it (``_reads``: iterated, tested)."""
        stack: list[tuple[cst.CSTNode, bool]] = [(function.body, False)]  # type: ignore[attr-defined]
        reads: set[int] = set()
        bound = False
        while stack:
            node, uncaptured = stack.pop()
            if node is at:
                return bound
            uncaptured = uncaptured or id(node) in self.uncaptured_blocks
            if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name) and node.target.value == name:
                if not uncaptured:
                    if bound:
                        return False  # a second binding a capture may run
                    bound = True
                continue
            if isinstance(node, cst.Name) and node.value == name and not (uncaptured or id(node) in reads):
                return False
            if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name):
                continue  # another name's binding
            if isinstance(node, cst.Attribute):
                inner: list[cst.CSTNode] = [node.value]
            elif isinstance(node, cst.Arg):
                inner = [node.value]
            else:
                inner = list(children(node))
            reads |= self._reads(node)
            stack.extend((child, uncaptured) for child in reversed(inner))
        return True

    def _reads(self, node: cst.CSTNode) -> set[int]:
        """id() of the children of ``node`` that only read a name there, if one: what a ``for``
        iterates or an ``if`` / ``while`` tests, and, in those, ``not x``, ``x and y``, ``x is
        None``, ``len(x)``, ``zip(x, y)``, ``enumerate(x)`` ..."""
        read: list[cst.CSTNode] = []
        if isinstance(node, (cst.For, cst.CompFor)):
            read = [node.iter]
        elif isinstance(node, (cst.If, cst.While, cst.CompIf)):
            read = [node.test]
        return {id(expr) for expr in read for expr in _read_parts(expr, self._builtin)}

    def _empty_truth(self, test: cst.BaseExpression, modes: Modes, at: cst.If) -> Modes | None:
        """``if x:`` / ``if not x:`` of a name empty in every mode left (or ``len(x)``, ``len(x)
        != 0``, ``len(x) > 0``, ``len(x) == 0``): the modes it is true in."""
        negated = False
        while True:
            if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                test, negated = test.expression, not negated
            elif (sign := _zero_comparison(test)) is not None:
                test, negated = test.left, negated != (not sign)  # type: ignore[attr-defined]
            elif isinstance(test, cst.Call) and self._builtin(test.func) == "len" and _one_positional(test):
                test = test.args[0].value
            else:
                break
        if not (modes and isinstance(test, cst.Name)) or self._empty_name(test.value, modes, at) != modes:
            return None
        return modes if negated else frozenset()

    def _loop_body(self, loop: cst.For) -> list[Any]:
        """A ``for`` loop's body, walked in the modes its iterable is not empty in."""
        modes = self.capture_modes
        empty = self._empty_modes(loop.iter, modes, loop) if modes else frozenset()
        if not empty:
            return [loop.body]
        return [self._set_capture_modes(modes - empty), loop.body, self._set_capture_modes(modes)]


def _zero_comparison(test: cst.BaseExpression) -> bool | None:
    """``x != 0`` / ``x > 0``: True (as true as ``x``); ``x == 0``: False (as ``not x``); None
    for any other test."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    comparison = test.comparisons[0]
    zero = comparison.comparator
    if not (isinstance(zero, cst.Integer) and zero.value == "0"):
        return None
    if isinstance(comparison.operator, (cst.NotEqual, cst.GreaterThan)):
        return True
    return False if isinstance(comparison.operator, cst.Equal) else None


def _one_positional(call: cst.Call) -> bool:
    return len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star


def _bound_names(statements: list[ast.stmt]) -> frozenset[str]:
    """The names ``statements`` bind anywhere in them."""
    names: set[str] = set()
    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                names.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                names.update(node.names)
            elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
                names.add(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                names.add(node.rest)
    return frozenset(names)
