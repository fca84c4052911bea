"""Definitions in the assignment graph's walk (``assignments.py``): a ``def`` or ``lambda`` binds
its name to the function (through its decorators, each a call of its own), its parameters to
their defaults and annotations, a method's first parameter to its class's instance (or the class);
a ``class`` binds its name and walks its body. A mixin of the walk, which provides the statements,
expressions and scopes.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable

from graphlint.checks.call_conditions import known_value
from graphlint.checks.facts import Decoration, DefFacts, Expr, FlowFacts
from graphlint.checks.flow_expressions import dotted
from graphlint.checks.flow_scopes import FlowScope, ScopeScan, annotation_nodes, parameters
from graphlint.checks.known_values import ChangedNames
from graphlint.checks.scopes import ScopeStack

_METHOD_DECORATORS = {"builtins.staticmethod": "static", "builtins.classmethod": "class", "builtins.property": "property"}


class FlowDefinitions(ScopeStack[FlowScope]):
    facts: FlowFacts
    scan: ScopeScan
    changed_names: ChangedNames  # what a statement may bind or fill, what nested definitions read
    ordinal: dict[int, int]
    annotated: Counter[str]
    _assign: Callable[[Expr | None, Expr | None], None]
    _store: Callable[[str], Expr]
    _expr: Callable[[ast.expr], Expr | None]
    _load: Callable[[str], Expr]
    _statements: Callable[[list[ast.stmt]], None]
    _return_branches: Callable[[ast.expr], None]
    _note_returns: Callable[..., None]

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer = self.scope
        qualname = self.nested_qualname(node.name)
        decorators = [(d, self._expr(d)) for d in node.decorator_list]
        method = None
        if outer.kind == "class":
            # called by the class body itself, it is a plain function there: its first
            # parameter is what that call hands in, not an instance of the class
            method = "static" if node.name in outer.called_in_body else "instance"
            for _, expr in decorators:
                if expr and expr[0] == "x" and f"builtins.{expr[1]}" in _METHOD_DECORATORS:
                    method = _METHOD_DECORATORS[f"builtins.{expr[1]}"]
        params = parameters(node.args)
        self.facts.defs.setdefault(qualname, DefFacts("function", params, method, line=node.lineno))
        self._defaults(qualname, node.args)
        self._annotations(qualname, node.args)
        self._annotation_calls(node)
        self._note_returns(qualname, node, [expr for _, expr in decorators])
        value: Expr = ["d", qualname]
        for decorator, expr in reversed(decorators):
            if expr and expr[0] == "x" and f"builtins.{expr[1]}" in _METHOD_DECORATORS:
                continue
            value = self._decorate(expr, value, decorator.lineno)
        self._assign(self._store(node.name), value)
        scope = self.scan.scope("function", qualname, node)
        scope.locals.update(p for p, _ in params)
        scope.known.shared = self.changed_names.closure_names(self.scan.defined.get(id(node), ())) | scope.globals | scope.nonlocals
        if method is not None:
            scope.after_super = self._after_super(node)
        if method in ("instance", "property", "class") and params:
            scope.class_name, scope.self_name = outer.qualname, params[0][0]
            seed = ["d", outer.qualname] if method == "class" else ["self", outer.qualname]
            self._assign(["v", scope.key(params[0][0])], seed)
        elif outer.kind == "function":
            scope.class_name, scope.self_name = outer.class_name, outer.self_name
        self.scopes.append(scope)
        self._statements(node.body)
        self.scopes.pop()

    def _after_super(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, set[int]] | None:
        """The statement ``super().<node's name>(...)`` in the method's own body, and the calls
        of the statements after it."""
        for index, statement in enumerate(node.body):
            call = statement.value if isinstance(statement, ast.Expr) else None
            if (
                isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == node.name
                and isinstance(call.func.value, ast.Call) and isinstance(call.func.value.func, ast.Name)
                and call.func.value.func.id == "super"
            ):
                later = {id(n) for s in node.body[index + 1 :] for n in ast.walk(s) if isinstance(n, ast.Call)}
                return self.ordinal[id(call)], later
        return None

    def _defaults(self, qualname: str, args: ast.arguments) -> None:
        """A default that is a value (not a constant such as ``None``), evaluated where the
        ``def`` is: the solver binds it where a call may leave the argument out
        (``parameter_defaults.py``); one known by its form (``None``, ``False``) decides the
        ``if``s on its parameter at the calls that leave it out (``call_conditions.py``)."""
        positional = [*args.posonlyargs, *args.args]
        pairs = [*zip(positional[len(positional) - len(args.defaults) :], args.defaults), *zip(args.kwonlyargs, args.kw_defaults)]
        for param, default in pairs:
            value = self._expr(default) if default is not None else None
            if value is not None:
                self.facts.defaults.setdefault(qualname, []).append((param.arg, value))
            known = known_value(default) if default is not None else None
            if known is not None:
                self.facts.known_defaults.setdefault(qualname, {})[param.arg] = known

    def _annotations(self, qualname: str, args: ast.arguments) -> None:
        """``model: Decoder``: the parameter holds a ``Decoder`` (whoever calls the function)."""
        for param in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            if param.annotation is not None and _fully_named(param.annotation):
                self.facts.typed_parameters.append(f"{qualname}.{param.arg}")
            if param.annotation is not None:
                for named in _annotated_names(param.annotation):
                    value = self._expr(named) if isinstance(named, ast.expr) else self._dotted_load(named)
                    if value is not None:
                        # what callers hand the parameter still decides an isinstance guard
                        self.annotated[f"{qualname}.{param.arg}"] += 1
                        self._assign(["v", f"{qualname}.{param.arg}"], ["n", value])

    def _annotation_calls(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """The calls an annotation makes (``stream: torch.get_device_module().Stream``), where the
        ``def`` is: a site each, as for any call there (under ``from __future__ import
        annotations`` they do not run; a call edge more is the safe side)."""
        for annotation in annotation_nodes(node):
            pending: list[ast.AST] = [annotation]
            while pending:
                part = pending.pop()
                if isinstance(part, ast.Call):
                    self._expr(part)  # its nested calls with it
                else:
                    pending.extend(ast.iter_child_nodes(part))

    def _dotted_load(self, dotted: str) -> Expr | None:
        head, *rest = dotted.split(".")
        if not head.isidentifier():
            return None
        value = self._load(head)
        for attr in rest:
            value = ["a", value, attr]
        return value

    def _decorate(self, decorator: Expr | None, value: Expr, line: int) -> Expr:
        self.facts.decorations.append(Decoration(self.function_scope.qualname, decorator, value, line))
        return ["r", len(self.facts.decorations) - 1]

    def _class(self, node: ast.ClassDef) -> None:
        qualname = self.nested_qualname(node.name)
        bases = [b for b in (self._expr(base) for base in node.bases) if b is not None]
        for keyword in node.keywords:
            self._expr(keyword.value)
        decorators = [(d.lineno, self._expr(d)) for d in node.decorator_list]
        self.facts.defs.setdefault(qualname, DefFacts("class", bases=bases, line=node.lineno))
        value: Expr = ["d", qualname]
        for line, expr in reversed(decorators):
            value = self._decorate(expr, value, line)
        self._assign(self._store(node.name), value)
        scope = self.scan.scope("class", qualname, node, class_name=qualname)
        scope.called_in_body = _called_in_body(node)
        self.scopes.append(scope)
        self._statements(node.body)
        self.scopes.pop()

    def _lambda(self, node: ast.Lambda) -> Expr:
        qualname = self.lambda_qualname()
        params = parameters(node.args)
        self.facts.defs.setdefault(qualname, DefFacts("function", params, line=node.lineno))
        self._defaults(qualname, node.args)
        scope = self.scan.scope("function", qualname, node)
        scope.locals.update(p for p, _ in params)
        scope.known.shared = self.changed_names.closure_names(self.scan.defined.get(id(node), ())) | scope.globals | scope.nonlocals
        scope.class_name, scope.self_name = self.function_scope.class_name, self.function_scope.self_name
        self.scopes.append(scope)
        self._return_branches(node.body)  # ``lambda f: f`` passes ``f`` (``returned_arguments.py``)
        self.scopes.pop()
        return ["d", qualname]


def _called_in_body(node: ast.ClassDef) -> set[str]:
    """The names a class body calls as plain functions (``name(...)``, ``@name``), outside the
    functions, lambdas and classes defined in it."""
    called: set[str] = set()
    pending: list[ast.AST] = list(node.body)
    while pending:
        item = pending.pop()
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            # ``@deco`` on a method calls ``deco`` with the function while the class is built
            called.update(d.id for d in item.decorator_list if isinstance(d, ast.Name))
            pending.extend(item.decorator_list)
            continue
        if isinstance(item, ast.Lambda):
            continue
        if isinstance(item, ast.Call) and isinstance(item.func, ast.Name):
            called.add(item.func.id)
        pending.extend(ast.iter_child_nodes(item))
    return called


def _fully_named(annotation: ast.expr) -> bool:
    """Whether ``_annotated_names`` gives every class the annotation allows: names, ``None`` and
    their unions (``A | None``, ``Optional[A]``, ``Union[A, B]``), nothing subscripted besides."""
    if isinstance(annotation, ast.Constant):
        return annotation.value is None or bool(_annotated_names(annotation))
    if isinstance(annotation, (ast.Name, ast.Attribute)):
        return True
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _fully_named(annotation.left) and _fully_named(annotation.right)
    if isinstance(annotation, ast.Subscript) and dotted(annotation.value) in ("Optional", "Union", "typing.Optional", "typing.Union"):
        inner = annotation.slice
        return all(_fully_named(part) for part in (inner.elts if isinstance(inner, ast.Tuple) else [inner]))
    return False


def _annotated_names(annotation: ast.expr) -> list[ast.expr | str]:
    """The classes an annotation names: ``Model``, ``"Model"``, ``Optional[Model]``, ``A | B``;
    not an attribute of a call's result (``torch.get_device_module().Stream``): annotations are
    not evaluated, and the walk knows no site for that call."""
    if isinstance(annotation, ast.Name) or (isinstance(annotation, ast.Attribute) and dotted(annotation) is not None):
        return [annotation]
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return [annotation.value.strip()] if annotation.value.strip().replace(".", "").isidentifier() else []
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _annotated_names(annotation.left) + _annotated_names(annotation.right)
    if isinstance(annotation, ast.Subscript) and dotted(annotation.value) in ("Optional", "Union", "typing.Optional", "typing.Union"):
        inner = annotation.slice
        parts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        return [name for part in parts for name in _annotated_names(part)]
    return []
