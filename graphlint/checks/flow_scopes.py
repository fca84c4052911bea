"""What each scope of one file's ``ast`` binds, for the assignment graph's walk (``assignments.py``).

Python decides at compile time which names are local to a function: those it assigns, imports,
defines, loops over or catches, unless declared ``global``/``nonlocal``. One pass over the tree
(``ScopeScan``) records that per scope, and the calls in source order (numbered as
``positions.py`` numbers libcst's); the walk then reads a name by these rules (``FlowScope``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from graphlint.checks.ast_children import child_nodes
from graphlint.checks.known_values import KnownValues
from graphlint.checks.positions import source_order
from graphlint.checks.scopes import Scope

FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPE_NODES = frozenset({*FUNCTION_NODES, ast.ClassDef, ast.Lambda})
_NAMED_BINDINGS = frozenset({ast.ExceptHandler, ast.MatchAs, ast.MatchStar})  # ``except E as name``, ``case [*name]``


@dataclass
class FlowScope(Scope):
    locals: set[str] = field(default_factory=set)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)
    self_name: str | None = None  # for methods: their first parameter
    known: KnownValues = field(default_factory=KnownValues)
    # A method whose body calls the method it overrides (``super().load_model()``) as a
    # statement: that call's ordinal, and the calls of the statements after it
    after_super: tuple[int, set[int]] | None = None
    # A class body: the names it calls as plain functions while the class is built
    # (``forward_cuda = _make_forward(QuantFP8.forward_cuda)``): such a ``def`` is no method
    called_in_body: set[str] = field(default_factory=set)

    def key(self, name: str) -> str:
        return name if self.kind == "module" else f"{self.qualname}.{name}"


def parameters(args: ast.arguments) -> list[tuple[str, str]]:
    params = [(a.arg, "o") for a in args.posonlyargs] + [(a.arg, "p") for a in args.args]
    if args.vararg is not None:
        params.append((args.vararg.arg, "*"))
    params += [(a.arg, "k") for a in args.kwonlyargs]
    if args.kwarg is not None:
        params.append((args.kwarg.arg, "**"))
    return params


@dataclass
class ScopeScan:
    """One pass over the tree: the calls in source order, and what each scope binds (assigned,
    imported, defined, loop and ``with`` targets), declares ``global``/``nonlocal`` and defines,
    keyed by the scope's node (``id``; the module's is the tree's)."""

    calls: list[ast.Call] = field(default_factory=list)
    bound: dict[int, set[str]] = field(default_factory=dict)
    # the functions, classes and lambdas written in each scope (not inside one of these)
    defined: dict[int, list[ast.AST]] = field(default_factory=dict)
    globals: dict[int, set[str]] = field(default_factory=dict)
    nonlocals: dict[int, set[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, tree: ast.Module) -> "ScopeScan":
        scan = cls()
        bound, calls = scan.bound, scan.calls
        stack: list[tuple[ast.AST, int]] = [(statement, id(tree)) for statement in tree.body]
        while stack:
            node, scope = stack.pop()
            node_type = type(node)  # ast node types are final: ``is`` is isinstance
            if node_type is ast.Name:  # the commonest node, and a leaf
                if type(node.ctx) is ast.Store:  # type: ignore[attr-defined]
                    bound.setdefault(scope, set()).add(node.id)  # type: ignore[attr-defined]
                continue
            if node_type is ast.Constant:  # the next commonest, a leaf too
                continue
            if node_type in _SCOPE_NODES:
                scan.defined.setdefault(scope, []).append(node)
                if node_type is not ast.Lambda:
                    bound.setdefault(scope, set()).add(node.name)  # type: ignore[attr-defined]
                    stack.extend((d, scope) for d in node.decorator_list)  # type: ignore[attr-defined]
                if node_type is ast.ClassDef:
                    stack.extend((e, scope) for e in (*node.bases, *(k.value for k in node.keywords)))  # type: ignore[attr-defined]
                    stack.extend((statement, id(node)) for statement in node.body)  # type: ignore[attr-defined]
                    continue
                arguments = node.args  # type: ignore[attr-defined]
                stack.extend((d, scope) for d in (*arguments.defaults, *arguments.kw_defaults) if d is not None)
                # the annotations' calls, as libcst counts them (calls are matched by ordinal)
                stack.extend((a, scope) for a in annotation_nodes(node))
                body = node.body if isinstance(node.body, list) else [node.body]  # type: ignore[attr-defined]
                stack.extend((statement, id(node)) for statement in body)
                continue
            if node_type is ast.Call:
                calls.append(node)  # type: ignore[arg-type]
            elif node_type is ast.Import or node_type is ast.ImportFrom:
                names = {a.asname or a.name.split(".", 1)[0] for a in node.names if a.name != "*"}  # type: ignore[attr-defined]
                bound.setdefault(scope, set()).update(names)
                continue
            elif node_type is ast.Global:
                scan.globals.setdefault(scope, set()).update(node.names)  # type: ignore[attr-defined]
            elif node_type is ast.Nonlocal:
                scan.nonlocals.setdefault(scope, set()).update(node.names)  # type: ignore[attr-defined]
            elif node_type in _NAMED_BINDINGS and node.name:  # type: ignore[attr-defined]
                bound.setdefault(scope, set()).add(node.name)  # type: ignore[attr-defined]
            for child in child_nodes(node):
                stack.append((child, scope))
        scan.calls = source_order(scan.calls)  # type: ignore[assignment]
        return scan

    def scope(self, kind: str, qualname: str, node: ast.AST, **extra: Any) -> FlowScope:
        key = id(node)
        return FlowScope(
            kind, qualname, locals=set(self.bound.get(key, ())),
            globals=self.globals.get(key, set()), nonlocals=self.nonlocals.get(key, set()), **extra,
        )


def annotation_nodes(node: ast.AST) -> list[ast.expr]:
    """The annotations of a function's parameters and of its return (none for a lambda)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    args = node.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs, *(a for a in (args.vararg, args.kwarg) if a is not None)]
    return [a for a in (*(p.annotation for p in params), node.returns) if a is not None]
