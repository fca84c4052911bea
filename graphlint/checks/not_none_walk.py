"""What the walk writes down for the "never None" facts, decided when the project is linked
(``not_none.py``): per call argument, per store of an attribute, per function's return.

A value is never None by its form (a literal other than ``None``, a display, a comparison,
``not``, ``bool(...)`` / ``int(...)`` / ``len(...)`` and the other builtins below) or where some
other values are: ``x`` (a parameter, per copy of the function), ``self.x`` (every store of the
attribute), ``f(...)`` (every function the call runs says so by its return annotation);
``A if p is None else p`` and ``p if p is not None else A`` where ``A`` is (the other branch is
``p`` narrowed), ``a or A`` where ``A`` is (a truthy value is no None), ``a and b`` where both
are. Written as the list of value expressions that must all be never None (``[]``: never None
by its form); anything else is None: it may be None. A mixin of the walk.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from graphlint.checks.call_conditions import known_value
from graphlint.checks.facts import CallSite, Expr, FlowFacts
from graphlint.checks.flow_scopes import FlowScope
from graphlint.checks.scopes import ScopeStack

# builtins whose result is never None (when the name is the builtin: nothing in the file binds it)
NEVER_NONE_BUILTINS = frozenset({
    "bool", "int", "float", "complex", "str", "bytes", "len", "isinstance", "issubclass", "hasattr",
    "callable", "repr", "tuple", "list", "dict", "set", "frozenset", "id", "hash", "type",
})
# return annotations (the last part of the name, or a subscript of one) that exclude None; a
# plain name of the project might be a TypeVar bound to anything, so only these
NEVER_NONE_TYPES = frozenset({
    "bool", "int", "float", "complex", "str", "bytes", "list", "dict", "tuple", "set", "frozenset",
    "List", "Dict", "Tuple", "Set", "FrozenSet", "Tensor",
})
# decorators that return what the function returns (a cache of its results)
RETURN_KEEPING_DECORATORS = frozenset({"functools.cache", "functools.lru_cache"})


class NotNoneWalk(ScopeStack[FlowScope]):
    facts: FlowFacts
    ordinal: dict[int, int]
    _load: Callable[[str], Expr]
    _qualified: Callable[[Expr | None], str | None]

    def _needs(self, node: ast.expr) -> list[Expr] | None:
        """The value expressions that make ``node``'s value never None (``[]``: its form
        does), or None."""
        known = known_value(node)
        if known is not None:
            return [] if known[0] is False else None
        if isinstance(node, ast.Compare) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
            return []
        if isinstance(node, ast.Name):
            return [self._load(node.id)]
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            return [["a", self._load(node.value.id), node.attr]]
        if isinstance(node, ast.Call) and id(node) in self.ordinal:
            func = node.func
            if isinstance(func, ast.Name) and func.id in NEVER_NONE_BUILTINS and self._load(func.id) == ["x", func.id]:
                return []
            return [["c", self.ordinal[id(node)]]]
        if isinstance(node, ast.IfExp):
            narrowed = _narrowed(node)
            return _all([self._needs(branch) for branch in (node.body, node.orelse) if branch is not narrowed])
        if isinstance(node, ast.BoolOp):
            values = node.values[-1:] if isinstance(node.op, ast.Or) else node.values
            return _all([self._needs(value) for value in values])
        return None

    def _note_arguments(self, node: ast.Call, site: CallSite) -> None:
        """The call's arguments its form does not make known: never None by form, or where
        some values are."""
        stars = [i for i, arg in enumerate(node.args) if isinstance(arg, ast.Starred)]
        named: list[tuple[str, ast.expr, Expr | None]] = [
            (str(i), arg, site.args[i]) for i, arg in enumerate(node.args[: stars[0]] if stars else node.args)
        ]
        keywords = dict(site.keywords)
        named += [(k.arg, k.value, keywords.get(k.arg)) for k in node.keywords if k.arg is not None]
        for key, arg, expr in named:
            if key in site.known:
                continue
            needs = self._needs(arg)
            if needs == []:
                site.known[key] = [False, None]
            elif needs:
                site.nonnull[key] = 1 if needs == [expr] else needs

    def _note_store(self, target: Expr | None, node: ast.expr | None) -> None:
        """A store into ``target`` (an attribute, or a class variable ``["v", "C.x"]``) of the
        value ``node`` (None: a value this cannot judge)."""
        if target is None:
            return
        needs = self._needs(node) if node is not None else None
        self.facts.stores.append((target, needs))

    def _note_returns(self, qualname: str, node: ast.FunctionDef | ast.AsyncFunctionDef, decorators: list[Expr | None]) -> None:
        """``-> bool``: the function never returns None (through decorators that return what it
        returns, only: ``functools.cache``)."""
        returns = node.returns
        if isinstance(returns, ast.Subscript):
            returns = returns.value
        name = returns.id if isinstance(returns, ast.Name) else returns.attr if isinstance(returns, ast.Attribute) else None
        if name not in NEVER_NONE_TYPES:
            return
        for expr in decorators:
            if expr is not None and expr[0] == "c" and self.facts.calls[expr[1]] is not None:
                expr = self.facts.calls[expr[1]].callee  # type: ignore[union-attr]  # @lru_cache(maxsize=...)
            if expr not in (["x", "staticmethod"], ["x", "classmethod"]) and self._qualified(expr) not in RETURN_KEEPING_DECORATORS:
                return
        self.facts.never_none_returns.append(qualname)


def _all(parts: list[list[Expr] | None]) -> list[Expr] | None:
    return None if any(part is None for part in parts) else [e for part in parts for e in part]  # type: ignore[union-attr]


def _narrowed(node: ast.IfExp) -> ast.expr | None:
    """The branch of ``A if p is None else p`` (or ``p if p is not None else A``) that is the
    tested name or attribute, there never None."""
    test = node.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot))):
        return None
    left, right = test.left, test.comparators[0]
    tested = left if isinstance(right, ast.Constant) and right.value is None else right if isinstance(left, ast.Constant) and left.value is None else None
    if not isinstance(tested, (ast.Name, ast.Attribute)):
        return None
    branch = node.orelse if isinstance(test.ops[0], ast.Is) else node.body
    return branch if ast.dump(branch) == ast.dump(tested) else None

