"""Returns in the assignment graph's walk (``assignments.py``), and the guards they sit under: a
``return`` under ``if isinstance(p, C):`` reaches only the calls that hand ``p`` a ``C``; ``if p
is None: return decorator`` only the calls where ``p`` is falsy; ``return p`` of a parameter is a
pass-through (each call gets its own argument back). A guard counts only if nothing else binds
its parameter. A mixin of the walk.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable

from graphlint.checks.facts import FALSY, Expr, FlowFacts
from graphlint.checks.flow_scopes import FlowScope
from graphlint.checks.scopes import ScopeStack


class ReturnGuards(ScopeStack[FlowScope]):
    facts: FlowFacts
    bindings: Counter[str]
    annotated: Counter[str]
    guards: list[tuple[str, str, Expr]]  # (function, parameter, classes) of the guards around here
    _assign: Callable[[Expr | None, Expr | None], None]
    _expr: Callable[[ast.expr], Expr | None]
    _load: Callable[[str], Expr]

    def _keep_sound_guards(self) -> None:
        """A guard says what its parameter was given only if nothing else binds it."""
        for function, guarded in list(self.facts.guarded.items()):
            rebound = lambda parameter: self.bindings[f"{function}.{parameter}"] > self.annotated[f"{function}.{parameter}"]  # noqa: E731
            unbound = [g for g in guarded if not rebound(g[0])]
            for parameter, _, key in guarded:
                if rebound(parameter):
                    self.facts.assigns.append((["v", f"{function}.<return>"], ["v", key]))
            if unbound:
                self.facts.guarded[function] = unbound
            else:
                del self.facts.guarded[function]

    def _isinstance_guard(self, test: ast.expr) -> tuple[str, str, Expr] | None:
        """``isinstance(p, C)`` (alone or first in an ``and``) with ``p`` a parameter of the
        function the ``if`` is in."""
        while isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            test = test.values[0]
        scope = self.function_scope
        if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"):
            return None
        if len(test.args) != 2 or test.keywords or not isinstance(test.args[0], ast.Name) or scope.kind != "function":
            return None
        named = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
        if not all(isinstance(n, (ast.Name, ast.Attribute)) for n in named):
            return None
        definition = self.facts.defs.get(scope.qualname)
        name = test.args[0].id
        classes = self._expr(test.args[1])
        if definition is None or classes is None or self._load("isinstance") != ["x", "isinstance"]:
            return None
        if name not in {p for p, kind in definition.params if kind in ("o", "p", "k")}:
            return None
        return (scope.qualname, name, classes)

    def _falsy_guard(self, test: ast.expr, negated: bool) -> tuple[str, str, Expr] | None:
        """``if p is None:`` / ``if not p:`` (``negated``), or the test of ``if p:`` / ``if p is
        not None:`` whose body returns: ``p`` a parameter, the code it guards runs when ``p`` is
        falsy."""
        if negated and isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test = test.operand
        elif isinstance(test, ast.Compare) and len(test.ops) == 1 and _is_none(test.comparators[0]):
            if not isinstance(test.ops[0], ast.IsNot if not negated else ast.Is):
                return None
            test = test.left
        elif negated:
            return None
        scope = self.function_scope
        definition = self.facts.defs.get(scope.qualname) if scope.kind == "function" else None
        if not isinstance(test, ast.Name) or definition is None:
            return None
        if test.id not in {p for p, kind in definition.params if kind in ("o", "p", "k")}:
            return None
        return (scope.qualname, test.id, FALSY)

    def _return(self, value: Expr | None) -> None:
        scope = self.function_scope
        if scope.kind != "function":
            return
        guard = next((g for g in reversed(self.guards) if g[0] == scope.qualname), None)
        if guard is None and value is not None and value[0] == "v" and value[1].startswith(f"{scope.qualname}."):
            definition = self.facts.defs.get(scope.qualname)
            name = value[1][len(scope.qualname) + 1 :]
            if definition is not None and name in {p for p, kind in definition.params if kind in ("o", "p", "k")}:
                self.facts.passes.setdefault(scope.qualname, []).append(name)  # the solver decides if it is rebound
                return
        if guard is None or value is None:
            if value is not None and value[0] == "c":
                self.facts.returned_calls.append(value[1])
            self._assign(["v", f"{scope.qualname}.<return>"], value)
            return
        guarded = self.facts.guarded.setdefault(scope.qualname, [])
        key = f"{scope.qualname}.<return {len(guarded)}>"
        guarded.append((guard[1], guard[2], key))
        self._assign(["v", key], value)


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
