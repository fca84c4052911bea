"""The conditions a call runs under, on its function's parameters, for the regions walk.

``if num_tokens_across_dp is None: coordinate_batch_across_dp(...)``: the call runs only when the
function is handed ``None`` (or nothing) for that parameter. The walk writes down, per call, the
tests of the ``if``s around it in its own function (the body: the test is true; the ``else``,
and what follows an ``if`` whose body returns or raises: false) as small trees over the
parameters: ``["none", p]`` (``p is None``), ``["truth", p]`` (``bool(p)``), ``["not", t]``,
``["and", ...]``, ``["or", ...]``, ``["?"]`` (anything else). And per call site, what it hands
over that is known by its form: a literal, a display, a lambda (``[is None, truth]``, either
``None`` when not known). The regions walk (``edge_conditions.py``) decides each call per edge.
A parameter a statement rebinds before the test (or anywhere, when the test is in a loop) says
nothing: its atoms become ``["?"]``; ``if p is None: p = compute()`` rebinds it after the test,
which keeps it. A mixin of the walk.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from typing import Any

from graphlint.checks import apis
from graphlint.checks.condition_atoms import atoms
from graphlint.checks.facts import CallSite, Expr, FlowFacts
from graphlint.checks.flow_scopes import FlowScope
from graphlint.checks.scopes import ScopeStack

UNKNOWN: Expr = ["?"]


class CallConditions(ScopeStack[FlowScope]):
    facts: FlowFacts
    bindings: Counter[str]
    first_values: dict[str, Expr]  # variable key → the value of its first assignment
    annotated: Counter[str]
    # (function, test tree, what the test is, whether in a loop of that function) around here
    conditions: list[tuple[str, Expr, bool, bool]]
    loops: Counter[str]  # function → loops open around here
    _note_arguments: Callable[[ast.Call, CallSite], None]
    _note_self_call: Callable[[int, ast.Call, CallSite], None]  # self_tests.py

    def _push_condition(self, test: ast.expr, holds: bool) -> bool:
        """Code after this runs where ``test`` is ``holds``; False if the test names no parameter.
        A parameter rebound before the test (in source order: the test is in no loop) says
        nothing; in a loop, one rebound anywhere in the function (``_keep_sound_conditions``)."""
        scope = self.function_scope
        tree = self._condition(test)
        rebound = {p for p in atoms([(tree, holds)]) if self._rebound(scope.qualname, p)}
        tree = _forget(tree, rebound)
        if scope.kind != "function" or not _names_a_parameter(tree):
            return False
        self.conditions.append((scope.qualname, tree, holds, self.loops[scope.qualname] > 0))
        return True

    def _rebound(self, function: str, parameter: str) -> bool:
        return self.bindings[f"{function}.{parameter}"] > self.annotated[f"{function}.{parameter}"]

    def _condition(self, test: ast.expr) -> Expr:
        params = self._parameters()
        if isinstance(test, ast.Name) and test.id in params:
            return ["truth", test.id]
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return ["not", self._condition(test.operand)]
        if isinstance(test, ast.BoolOp):
            return ["and" if isinstance(test.op, ast.And) else "or", *(self._condition(v) for v in test.values)]
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot)):
            sides = [test.left, test.comparators[0]]
            named = [s for s in sides if isinstance(s, ast.Name) and s.id in params]
            if named and any(isinstance(s, ast.Constant) and s.value is None for s in sides):
                atom: Expr = ["none", named[0].id]  # type: ignore[attr-defined]
                return atom if isinstance(test.ops[0], ast.Is) else ["not", atom]
        return UNKNOWN

    def _parameters(self) -> set[str]:
        scope = self.function_scope
        definition = self.facts.defs.get(scope.qualname) if scope.kind == "function" else None
        return {p for p, kind in definition.params if kind in ("o", "p", "k")} if definition else set()

    def _note_call(self, ordinal: int, node: ast.Call, site: CallSite) -> None:
        """The call's known arguments, and the conditions of its own function around it."""
        for index, arg in enumerate(node.args):
            if isinstance(arg, ast.Starred):
                break
            known = self._known_argument(arg, site.args[index])
            if known is not None:
                site.known[str(index)] = known
        for keyword in node.keywords:
            known = self._known_argument(keyword.value, dict(site.keywords).get(keyword.arg)) if keyword.arg is not None else None
            if known is not None:
                site.known[keyword.arg] = known  # type: ignore[index]
        self._note_arguments(node, site)
        self._note_self_call(ordinal, node, site)
        around = [[tree, holds, looped] for function, tree, holds, looped in self.conditions if function == site.scope]
        if around:
            self.facts.call_conditions[ordinal] = around

    def _known_argument(self, node: ast.expr, expr: Expr | None) -> list[bool | None] | None:
        """``known_value``, and a tensor a torch factory makes (never ``None``)."""
        known = known_value(node)
        if known is None and expr is not None and expr[0] == "c":
            inner = self.facts.calls[expr[1]]
            if inner is not None and self._qualified(inner.callee) in apis.TENSOR_FACTORIES:
                return [False, None]
        return known

    def _qualified(self, expr: Expr | None, seen: frozenset[str] = frozenset()) -> str | None:
        """The dotted name an imported name, or an attribute of one, reads (``torch.full``): a
        variable bound once, by an import. ``seen``: the variables followed so far (a variable
        bound once to an attribute of itself, ``fn = fn.__wrapped__``, names nothing)."""
        if expr is None:
            return None
        if expr[0] == "g":
            return expr[1]
        if expr[0] == "a":
            base = self._qualified(expr[1], seen)
            return None if base is None else f"{base}.{expr[2]}"
        if expr[0] == "v" and self.bindings[expr[1]] == 1 and expr[1] not in seen:
            imported = self.first_values.get(expr[1])
            if imported is None or imported[0] not in ("g", "a"):
                return None
            return self._qualified(imported, seen | {expr[1]})
        return None

    def _keep_sound_conditions(self) -> None:
        """In a loop, a parameter some statement of the function rebinds (the loop may come
        back to the test after it) is not what the call handed over."""
        for ordinal, around in list(self.facts.call_conditions.items()):
            site = self.facts.calls[ordinal]
            rebound = {p for p in atoms([c for c in around if c[2]]) if site is not None and self._rebound(site.scope, p)}
            kept = [[_forget(tree, rebound) if looped else tree, holds] for tree, holds, looped in around]
            kept = [c for c in kept if _names_a_parameter(c[0])]
            if kept:
                self.facts.call_conditions[ordinal] = kept
            else:
                del self.facts.call_conditions[ordinal]


def known_value(node: ast.expr) -> list[bool | None] | None:
    """``[is None, truth]`` of a value known by its form (either None where the form does not
    say), or None."""
    if isinstance(node, ast.Constant):
        return [node.value is None, bool(node.value)]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
        parts: list[Any] = list(node.keys) if isinstance(node, ast.Dict) else list(node.elts)
        plain = [part for part in parts if part is not None and not isinstance(part, ast.Starred)]
        return [False, True if plain else (False if not parts else None)]  # ``[*xs]``: as long as ``xs``
    if isinstance(node, (ast.Lambda, ast.GeneratorExp)):
        return [False, True]
    if isinstance(node, (ast.JoinedStr, ast.ListComp, ast.SetComp, ast.DictComp)):
        return [False, None]
    return None


def _names_a_parameter(tree: Expr) -> bool:
    return bool(atoms([(tree, True)]))


def _forget(tree: Expr, names: set[str]) -> Expr:
    if tree[0] in ("none", "truth"):
        return UNKNOWN if tree[1] in names else tree
    if tree[0] in ("not", "and", "or"):
        return [tree[0], *(_forget(part, names) for part in tree[1:])]
    return tree
