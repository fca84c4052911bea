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
from graphlint.checks.flow_expressions import dotted, union
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
    tree: ast.Module
    _open_predicates: tuple[str, ...] = ()  # the predicates being read: one that calls itself ends there

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

    def _isinstance_guard(self, test: ast.expr, negated: bool = False) -> tuple[str, str, Expr] | None:
        """A test true only where a parameter ``p`` of the function the ``if`` is in is an
        instance of some classes: ``isinstance(p, C)``, ``isinstance(p, (A, B))``, any conjunct
        of an ``and``, an ``or`` of such tests on the same ``p`` (the classes of each).
        ``negated``: where ``test`` is false (its ``else``, what follows ``if test: return``);
        there, and in the body of ``if not isinstance(p, C):``, the code runs for a value of none
        of the classes (``["not", classes]``), if the test says no more than ``isinstance``."""
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, negated = test.operand, not negated
        scope = self.function_scope
        definition = self.facts.defs.get(scope.qualname) if scope.kind == "function" else None
        implied = self._classes_implied(test, exact=negated)
        if definition is None or implied is None or self._load("isinstance") != ["x", "isinstance"]:
            return None
        name, named = implied
        if name not in {p for p, kind in definition.params if kind in ("o", "p", "k")}:
            return None
        classes = union([self._expr(n) for n in named])
        if classes is None:
            return None
        return (scope.qualname, name, ["not", classes] if negated else classes)

    def _classes_implied(self, test: ast.expr, exact: bool) -> tuple[str, list[ast.expr]] | None:
        """(parameter, class expressions) that ``test`` being true implies (``exact``: that it
        is also false for every other value: no ``and``), or None."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            if exact:
                return None
            return next((found for found in (self._classes_implied(v, exact) for v in test.values) if found is not None), None)
        if isinstance(test, ast.BoolOp):  # or: every side must name the same parameter
            sides = [self._classes_implied(v, exact) for v in test.values]
            if any(s is None for s in sides) or len({s[0] for s in sides}) != 1:  # type: ignore[index]
                return None
            return sides[0][0], [c for s in sides for c in s[1]]  # type: ignore[index]
        if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id != "isinstance":
            return self._predicate_implied(test, exact)
        if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"):
            return None
        if len(test.args) != 2 or test.keywords or not isinstance(test.args[0], ast.Name):
            return None
        named = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
        if not all(dotted(n) is not None for n in named):  # names only: reading them again calls nothing
            return None
        return test.args[0].id, list(named)

    def _predicate_implied(self, test: ast.Call, exact: bool) -> tuple[str, list[ast.expr]] | None:
        """``is_moe(layer)`` of a predicate the module defines once at its top level as ``def
        is_moe(layer): return isinstance(layer, (A, B))`` (a docstring aside): what its test
        implies, on the argument handed to that parameter (vllm-ascend's quantization configs'
        ``_is_fused_moe_layer``). Its class names are read where the call is: module-level names
        of the same file."""
        name = test.func.id  # type: ignore[attr-defined]
        if self._load(name) != ["v", name] or test.keywords or name in self._open_predicates:
            return None
        defined = [n for n in self.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom)) and name in _bound_names(n)]
        if len(defined) != 1 or not isinstance(defined[0], ast.FunctionDef) or defined[0].decorator_list:
            return None
        helper = defined[0]
        body = [b for b in helper.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
        if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
            return None
        self._open_predicates = (*self._open_predicates, name)
        try:
            implied = self._classes_implied(body[0].value, exact)
        finally:
            self._open_predicates = self._open_predicates[:-1]
        positional = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]
        if implied is None or implied[0] not in positional:
            return None
        index = positional.index(implied[0])
        if index >= len(test.args) or not isinstance(test.args[index], ast.Name):
            return None
        return test.args[index].id, implied[1]  # type: ignore[attr-defined]

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


def _bound_names(node: ast.stmt) -> set[str]:
    """The module-level names a top-level statement binds (imports by their first name)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[union-attr]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
