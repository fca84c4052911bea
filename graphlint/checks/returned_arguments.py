"""Functions that return one of their ``*args`` or a value of their ``**kwargs``: each call gets
its own argument back.

``pass_through.py`` gives each call of ``def f(p): return p`` the node of its own argument. An
identity layer written over ``*args, **kwargs`` (vLLM's pipeline placeholder ``forward(self,
*args, **kwargs): return args[0] if args else next(iter(kwargs.values()))``, shared by every
model) returns an element of its rest parameters instead. Context-insensitive, that return held
every argument of every caller: what one model handed its placeholder came back in every other
model. Here the forms below are *rest passes*: a call receives the argument it hands to that
position or keyword, found in its own ``CallArgs`` (or, when it forwards its own ``*args`` /
``**kwargs``, in the caller's keyed nodes, ``rest_arguments.py``):

- ``args[i]`` (``i`` a non-negative literal) and ``next(iter(args))`` (``i`` = 0) of the ``*``
  parameter;
- ``kwargs["name"]`` and ``kwargs.get("name"[, default])`` of the ``**`` parameter (the default
  is an ordinary return);
- ``next(iter(kwargs.values()))``: the first keyword value, any keyword the named parameters do
  not take.

A returned ``a if c else b`` or ``a or b`` is split into its branches, each a return of its own
(so ``return p if c else q`` passes ``p`` too), and a lambda's body is read as its return: ``lambda
f: f``, the identity a placeholder decorator with arguments returns for every function it
decorates (vLLM's ``triton.jit(...)`` stand-in), passes ``f``. Where the call's argument at that place is not
known (``f(*xs)``, ``f(**d)``), or a statement rebinds the rest parameter, the call gets the
shared parameter, as before.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from typing import TYPE_CHECKING

from graphlint.checks.facts import Expr, FlowFacts
from graphlint.checks.rest_arguments import Key, RestArguments
from graphlint.checks.scopes import ScopeStack
from graphlint.checks.value_graph import CallArgs, LinkedModule

if TYPE_CHECKING:  # the walk's scopes import the walk (libcst positions): not for a warm run's solve
    from graphlint.checks.flow_scopes import FlowScope

RestPass = tuple[str, Key]  # (the ``*``/``**`` parameter, the position or keyword it returns)


class ReturnedArgumentsWalk(ScopeStack["FlowScope"]):
    """The walk's half (a mixin of ``assignments.py``'s walker): a return's branches, and which
    of them are rest passes (``FlowFacts.rest_passes``)."""

    facts: FlowFacts
    guards: list[tuple[str, str, Expr]]
    _expr: Callable[[ast.expr], Expr | None]
    _load: Callable[[str], Expr]
    _return: Callable[[Expr | None], None]
    ordinal: dict[int, int]

    def _return_branches(self, value: ast.expr) -> None:
        """``return value``, one branch at a time; the tests of ``a if c else b`` are read for
        their calls."""
        for branch in self._branches(value):
            self._return_branch(branch, self._expr(branch))

    def _return_branch(self, branch: ast.expr, read: Expr | None) -> None:
        """``branch`` (``read`` as the walk reads it): a rest pass, or an ordinary return."""
        found = self._rest_pass(branch)
        scope = self.function_scope.qualname
        if found is None or any(g[0] == scope for g in self.guards):  # guarded: as before
            # ``return x if x is not None else d``: each branch as ``return x`` reads it, what
            # the call that just bound ``x`` made (``known_values.py``)
            made = self.scope.known.returned(branch.id) if isinstance(branch, ast.Name) else None
            self._return(made or read)
            return
        rest_pass, default = found
        self.facts.rest_passes.setdefault(scope, []).append(rest_pass)
        if default is not None:  # ``kwargs.get("x", default)``: the default as the call site read it
            site = self.facts.calls[self.ordinal[id(branch)]]
            self._return_branch(default, site.args[1] if site is not None else None)

    def _branches(self, value: ast.expr) -> Iterator[ast.expr]:
        if isinstance(value, ast.IfExp):
            self._expr(value.test)
            yield from self._branches(value.body)
            yield from self._branches(value.orelse)
        elif isinstance(value, ast.BoolOp):
            for part in value.values:
                yield from self._branches(part)
        else:
            yield value

    def _rest_pass(self, node: ast.expr) -> tuple[RestPass, ast.expr | None] | None:
        """The rest pass ``node`` is (and the default it may return instead), or None."""
        scope = self.function_scope
        definition = self.facts.defs.get(scope.qualname) if scope.kind == "function" else None
        if definition is None:
            return None
        kinds = {name: kind for name, kind in definition.params if kind in ("*", "**")}
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Constant):
            rest, key = node.value.id, node.slice.value
            if kinds.get(rest) == "*" and isinstance(key, int) and not isinstance(key, bool) and key >= 0:
                return (rest, key), None
            if kinds.get(rest) == "**" and isinstance(key, str):
                return (rest, key), None
            return None
        if not isinstance(node, ast.Call) or node.keywords:
            return None
        if isinstance(node.func, ast.Attribute) and node.func.attr == "get" and isinstance(node.func.value, ast.Name):
            if kinds.get(node.func.value.id) == "**" and 1 <= len(node.args) <= 2:
                key = node.args[0].value if isinstance(node.args[0], ast.Constant) else None
                if isinstance(key, str):
                    return (node.func.value.id, key), node.args[1] if len(node.args) == 2 else None
            return None
        first = self._builtin_call(node, "next")
        inner = self._builtin_call(first, "iter") if first is not None else None
        if isinstance(inner, ast.Name) and kinds.get(inner.id) == "*":
            return (inner.id, 0), None
        if (
            isinstance(inner, ast.Call) and not inner.args and not inner.keywords
            and isinstance(inner.func, ast.Attribute) and inner.func.attr == "values"
            and isinstance(inner.func.value, ast.Name) and kinds.get(inner.func.value.id) == "**"
        ):
            return (inner.func.value.id, None), None
        return None

    def _builtin_call(self, node: ast.expr, name: str) -> ast.expr | None:
        """The one argument of ``name(argument)``, ``name`` the builtin."""
        if (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
            and len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred)
            and self._load(name) == ["x", name]
        ):
            return node.args[0]
        return None


class ReturnedArguments(RestArguments):
    """The solver's half: a call of a function with rest passes receives its own arguments."""

    files: list[LinkedModule]
    bound_variables: list[set[str]]  # per file, the variables some statement binds
    preview: bool  # rest passes per call only in preview (docs/callgraph.md "Call-site contexts")

    def bind_rest_passes(self, file: int, qualname: str, params: list[tuple[str, str]], args: CallArgs, out: int, prefix: str) -> None:
        """The call ``out`` receives, for each rest pass of ``qualname``, the argument it hands
        there; ``prefix``: the function's variables' (a copy's)."""
        for rest, key in self.files[file].facts.flow.rest_passes.get(qualname, ()):
            shared = self.variable(file, f"{prefix}.{rest}")
            # it holds more than its callers' arguments; or, outside preview, every caller's
            if f"{qualname}.{rest}" in self.bound_variables[file] or not self.preview:
                self.edge(shared, out)
            elif dict(params).get(rest) == "*":
                self._hand_back_position(params, args, key, shared, out)  # type: ignore[arg-type]
            else:
                self._hand_back_keyword(params, args, key, shared, out)  # type: ignore[arg-type]

    def hand_back_forwarded(self, params: list[tuple[str, str]], args: CallArgs, name: str, out: int) -> None:
        """``return p`` called with the caller's own ``*args`` / ``**kwargs`` handed on (and no
        other ``*xs`` / ``**d``): the call gets the element at ``p``'s position and the value of
        the keyword ``p`` (``pass_through.py`` asks, where the argument is not in the call)."""
        positional = [p for p, kind in params if kind in ("o", "p")]
        if name in positional:
            wanted = positional.index(name) - len(args.positional)
            for rest in args.forwarded_star if wanted >= 0 else ():
                self.watch_rest(rest, lambda found, node: self.edge(node, out) if found in (wanted, None) else None)
        if any(p == name and kind in ("p", "k") for p, kind in params):
            for rest in args.forwarded_keywords:
                self.watch_rest(rest, lambda found, node: self.edge(node, out) if found in (name, None) else None)

    def _hand_back_position(self, params: list[tuple[str, str]], args: CallArgs, key: int, shared: int, out: int) -> None:
        index = sum(1 for _, kind in params if kind in ("o", "p")) + key
        if index < len(args.positional):
            self.edge(args.positional[index], out)
        elif args.star:
            self.edge(shared, out)
        wanted = index - len(args.positional)
        for rest in args.forwarded_star if wanted >= 0 else ():  # the caller's own ``*args``, element by element
            self.watch_rest(rest, lambda found, node: self.edge(node, out) if found in (wanted, None) else None)

    def _hand_back_keyword(self, params: list[tuple[str, str]], args: CallArgs, key: str | None, shared: int, out: int) -> None:
        named = {name for name, kind in params if kind in ("p", "k")}
        for keyword, node in args.keywords:
            if keyword not in named and key in (keyword, None):
                self.edge(node, out)
        if args.double_star:
            self.edge(shared, out)
        for rest in args.forwarded_keywords:  # the caller's own ``**kwargs``, keyword by keyword
            self.watch_rest(
                rest, lambda found, node: self.edge(node, out) if found is None or (found not in named and key in (found, None)) else None,
            )
