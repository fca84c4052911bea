"""One file's ``ast`` → its half of the assignment graph (``facts.FlowFacts``).

In the spirit of PyCG (Salis et al., ICSE 2021): every name, attribute, parameter and return is a
node of the graph, and each statement says which values flow into which node: ``x = f(y)``
makes ``x`` receive what call ``f(y)`` returns; ``self.layer = layer`` in a method of ``Block``
makes ``Block.layer`` receive what the parameter ``layer`` receives. Names are resolved by Python's
own scoping rules (locals, closures, ``global``/``nonlocal``, class bodies), so a parameter never
reads a module-level name of the same spelling. What the calls mean is decided when the project
is linked (``valueflow.py``); this module only writes the file's statements down, which keeps
the result cacheable by the file's content.

The walk reads the ``ast`` tree (the one ``extract.py`` parses anyway): its nodes carry the
positions that number the calls the same way ``positions.py`` numbers libcst's.
"""

from __future__ import annotations

import ast
from collections import Counter

from graphlint.checks.facts import FALSY, MODULE_SCOPE, Decoration, DefFacts, Expr, FlowFacts, ImplicitCall
from graphlint.checks.flow_expressions import FlowExpressions, dotted, union
from graphlint.checks.flow_scopes import FUNCTION_NODES, ScopeScan, parameters

_METHOD_DECORATORS = {"builtins.staticmethod": "static", "builtins.classmethod": "class", "builtins.property": "property"}


def flow_facts(tree: ast.Module) -> FlowFacts:
    return _FlowWalker(tree).run()


class _FlowWalker(FlowExpressions):
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.facts = FlowFacts()
        self.scan = ScopeScan.of(tree)
        calls = self.scan.calls
        self.ordinal = {id(node): index for index, node in enumerate(calls)}
        self.facts.calls = [None] * len(calls)
        self.scopes = []
        self.spreads = []
        self.bindings: Counter[str] = Counter()  # variable key → how many statements bind it
        self.tuples: dict[str, list[Expr | None]] = {}  # variable key → the tuple display bound to it
        # (function, parameter, classes) of each ``if isinstance(parameter, classes):`` around here
        self.guards: list[tuple[str, str, Expr]] = []
        self.annotated: Counter[str] = Counter()  # parameter key → annotations that bind it

    def run(self) -> FlowFacts:
        module = self.scan.scope("module", MODULE_SCOPE, self.tree)
        self.scopes.append(module)
        self._statements(self.tree.body)
        self._spread_tuples()
        self._keep_sound_guards()
        return self.facts

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

    def _spread_tuples(self) -> None:
        """``args = (config, executor, stats); Client(*args)``: a local bound once, to a tuple
        display, hands its elements position by position (spread as one value, each element
        would reach every parameter)."""
        for ordinal, key in self.spreads:
            elements = self.tuples.get(key)
            site = self.facts.calls[ordinal]
            function, _, name = key.rpartition(".")
            definition = self.facts.defs.get(function)
            parameter = definition is not None and any(p == name for p, _ in definition.params)
            if elements is not None and self.bindings[key] == 1 and not parameter and site is not None:
                site.args.extend(elements)
                site.star, site.star_last = [], False

    def _store(self, name: str) -> Expr:
        scope = self.scope
        if name in scope.globals:
            return ["v", name]
        if name in scope.nonlocals:
            for outer in reversed(self.scopes[:-1]):
                if outer.kind == "function" and name in outer.locals:
                    return ["v", outer.key(name)]
        return ["v", scope.key(name)]

    def _assign(self, target: Expr | None, value: Expr | None) -> None:
        if target is not None and target[0] == "v":
            self.bindings[target[1]] += 1
        if target is not None and value is not None:
            self.facts.assigns.append((target, value))

    # ---- statements -------------------------------------------------------------------------
    def _statements(self, body: list[ast.stmt]) -> None:
        pushed = 0
        for statement in body:
            self._statement(statement)
            # ``if obj: return decorator(obj)`` then ``return decorator``: what follows runs only
            # when ``obj`` is falsy (a decorator with optional arguments, used bare or called)
            guard = self._falsy_guard(statement.test, negated=False) if _returns_without_else(statement) else None  # type: ignore[attr-defined]
            if guard is not None:
                self.guards.append(guard)
                pushed += 1
        del self.guards[len(self.guards) - pushed :]

    def _statement(self, node: ast.stmt) -> None:
        if isinstance(node, FUNCTION_NODES):
            self._function(node)
        elif isinstance(node, ast.ClassDef):
            self._class(node)
        elif isinstance(node, ast.Assign):
            self._assignment(node.targets, node.value)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            if node.value is not None:
                self._assignment([node.target], node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self.scope.known.forget()
            self._bind_loop(node.target, node.iter)
            self._statements(node.body)
            self._statements(node.orelse)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            self.scope.known.forget()
            for item in node.items:
                value = self._expr(item.context_expr)
                if item.optional_vars is not None:
                    self._bind_target(item.optional_vars, value)
            self._statements(node.body)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self._assign(self._store(alias.asname), ["g", alias.name])
                else:
                    head = alias.name.split(".", 1)[0]
                    self._assign(self._store(head), ["g", head])
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    self.facts.star_imports.append(base)
                    continue
                # ``from pkg import name`` reads the package's attribute: what its ``__init__``
                # binds to ``name`` (``from .docs import docs`` there makes it the function), else
                # the submodule; never the submodule alone, as ``import pkg.name as x`` does.
                self._assign(self._store(alias.asname or alias.name), ["a", ["g", base], alias.name])
        elif isinstance(node, ast.Raise) and isinstance(node.exc, (ast.Name, ast.Attribute)):
            self._implicit("raise", self._expr(node.exc))  # raise Error: Error() is constructed
            if node.cause is not None:
                self._expr(node.cause)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                made = self.scope.known.returned(node.value.id) if isinstance(node.value, ast.Name) else None
                self._return(made or self._expr(node.value))
        elif isinstance(node, ast.If):
            self.scope.known.forget()
            self._expr(node.test)
            guard = self._isinstance_guard(node.test) or self._falsy_guard(node.test, negated=True)
            if guard is not None:
                self.guards.append(guard)
            self._statements(node.body)
            if guard is not None:
                self.guards.pop()
            self._statements(node.orelse)
        elif isinstance(node, (ast.Global, ast.Nonlocal, ast.Pass, ast.Break, ast.Continue)):
            return
        else:  # if / while / try / match / expressions / raise / assert / del: their parts
            compound = not isinstance(node, (ast.Expr, ast.Assert, ast.Raise, ast.Delete))
            if compound:
                self.scope.known.forget()
            self._parts(node)
            if compound:
                self.scope.known.forget()
            return
        if isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.AugAssign, ast.If)):
            self.scope.known.forget()

    def _parts(self, node: ast.stmt) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self._statement(child)
            elif isinstance(child, ast.expr):
                self._expr(child)
            elif isinstance(child, (ast.excepthandler, ast.match_case)):
                for part in ast.iter_child_nodes(child):
                    if isinstance(part, ast.stmt):
                        self._statement(part)
                    elif isinstance(part, ast.expr):
                        self._expr(part)

    def _implicit(self, kind: str, value: Expr | None) -> Expr | None:
        if value is None:
            return None
        self.facts.implicit.append(ImplicitCall(self.function_scope.qualname, kind, value))  # type: ignore[arg-type]
        return ["it", len(self.facts.implicit) - 1]

    def _iterate(self, iterable: Expr | None) -> Expr | None:
        """What a loop variable holds: the elements of a (transparent) container, or what the
        iterator protocol of an instance returns."""
        return union([iterable, self._implicit("iterate", iterable)])

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

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer = self.scope
        qualname = self.nested_qualname(node.name)
        decorators = [(d, self._expr(d)) for d in node.decorator_list]
        method = None
        if outer.kind == "class":
            method = "instance"
            for _, expr in decorators:
                if expr and expr[0] == "x" and f"builtins.{expr[1]}" in _METHOD_DECORATORS:
                    method = _METHOD_DECORATORS[f"builtins.{expr[1]}"]
        params = parameters(node.args)
        self.facts.defs.setdefault(qualname, DefFacts("function", params, method, line=node.lineno))
        self._defaults(qualname, node.args)
        self._annotations(qualname, node.args)
        value: Expr = ["d", qualname]
        for decorator, expr in reversed(decorators):
            if expr and expr[0] == "x" and f"builtins.{expr[1]}" in _METHOD_DECORATORS:
                continue
            value = self._decorate(expr, value, decorator.lineno)
        self._assign(self._store(node.name), value)
        scope = self.scan.scope("function", qualname, node)
        scope.locals.update(p for p, _ in params)
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
        """A default that is a value (not a constant such as ``None``) binds its parameter."""
        positional = [*args.posonlyargs, *args.args]
        pairs = [*zip(positional[len(positional) - len(args.defaults) :], args.defaults), *zip(args.kwonlyargs, args.kw_defaults)]
        for param, default in pairs:
            value = self._expr(default) if default is not None else None
            if value is not None:
                self._assign(["v", f"{qualname}.{param.arg}"], value)

    def _annotations(self, qualname: str, args: ast.arguments) -> None:
        """``model: Decoder``: the parameter holds a ``Decoder`` (whoever calls the function)."""
        for param in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            if param.annotation is not None:
                for named in _annotated_names(param.annotation):
                    value = self._expr(named) if isinstance(named, ast.expr) else self._dotted_load(named)
                    if value is not None:
                        # what callers hand the parameter still decides an isinstance guard
                        self.annotated[f"{qualname}.{param.arg}"] += 1
                        self._assign(["v", f"{qualname}.{param.arg}"], ["n", value])

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
        self.scopes.append(scope)
        self._statements(node.body)
        self.scopes.pop()

    def _assignment(self, targets: list[ast.expr], value_node: ast.expr) -> None:
        pairwise = [
            t for t in targets
            if isinstance(t, (ast.Tuple, ast.List)) and _unpacks_pairwise(t, value_node)
        ]
        if not pairwise:
            value = self._expr(value_node)
            if isinstance(value_node, ast.Call):
                self._note_rebinding(targets, value_node)
            for target in targets:
                self._bind_target(target, value, value_node)
            return
        elements = [self._expr(e) for e in value_node.elts]  # type: ignore[attr-defined]
        for target in targets:
            if target in pairwise:  # a, b = f, g: each name its own value
                for part, element, node in zip(target.elts, elements, value_node.elts):  # type: ignore[attr-defined]
                    self._bind_target(part, element, node)
            else:
                self._bind_target(target, union(elements))

    def _note_rebinding(self, targets: list[ast.expr], call: ast.Call) -> None:
        """``self.model = Wrapper(self.model, ...)``: the argument holds what the target held
        *before* this statement, never what the call makes (the graph alone cannot tell, as it
        does not follow the order of statements)."""
        written = {dotted(t) for t in targets} - {None}
        if not written:
            return
        site = self.facts.calls[self.ordinal[id(call)]]
        assert site is not None
        after_super = self.function_scope.after_super
        if after_super is not None and id(call) in after_super[1]:
            site.after_super = after_super[0]
        positional = [arg for arg in call.args if not isinstance(arg, ast.Starred)]  # as ``site.args``
        site.rebinds = [i for i, arg in enumerate(positional) if dotted(arg) in written] + [
            k.arg for k in call.keywords if k.arg is not None and dotted(k.value) in written
        ]

    def _bind_target(self, target: ast.expr, value: Expr | None, node: ast.expr | None = None) -> None:
        if isinstance(target, ast.Name):
            stored = self._store(target.id)
            self._assign(stored, value)
            if isinstance(node, ast.Tuple) and id(node) in self.scope.known.literals:
                known = self.scope.known.literals[id(node)]
                self.tuples[stored[1]] = [known[i].value for i in range(len(node.elts))]
            plain = target.id in self.scope.locals and not {target.id} & (self.scope.globals | self.scope.nonlocals)
            if plain:
                self.scope.known.bind(target.id, value, node)
        elif isinstance(target, ast.Attribute):
            self._assign(self._attribute_target(target), value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._bind_target(element, value)
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value, value)
        elif isinstance(target, ast.Subscript):  # d[k] = v: the container holds v
            self._expr(target.slice)
            self.scope.known.store(target, value, node)
            self._fill(target.value, value)

    def _fill(self, container: ast.expr, value: Expr | None) -> None:
        """``container`` (a name, attribute or element of one) now also holds ``value``."""
        if isinstance(container, ast.Subscript):
            self._fill(container.value, value)
        elif isinstance(container, ast.Name):
            target = self._load(container.id)  # the variable it names (or the one it aliases)
            if target[0] in ("v", "a"):
                self._assign(target, value)
        elif isinstance(container, ast.Attribute):
            self._assign(self._attribute_target(container), value)

    def _attribute_target(self, target: ast.Attribute) -> Expr | None:
        owner = target.value
        scope = self.function_scope
        if isinstance(owner, ast.Name) and owner.id == scope.self_name and scope.class_name is not None:
            return ["v", f"{scope.class_name}.{target.attr}"]  # self.x: the class's namespace
        base = self._expr(owner)
        return ["a", base, target.attr] if base is not None else None

    def _lambda(self, node: ast.Lambda) -> Expr:
        qualname = self.lambda_qualname()
        params = parameters(node.args)
        self.facts.defs.setdefault(qualname, DefFacts("function", params, line=node.lineno))
        self._defaults(qualname, node.args)
        scope = self.scan.scope("function", qualname, node)
        scope.locals.update(p for p, _ in params)
        scope.class_name, scope.self_name = self.function_scope.class_name, self.function_scope.self_name
        self.scopes.append(scope)
        self._assign(["v", f"{qualname}.<return>"], self._expr(node.body))
        self.scopes.pop()
        return ["d", qualname]


def _annotated_names(annotation: ast.expr) -> list[ast.expr | str]:
    """The classes an annotation names: ``Model``, ``"Model"``, ``Optional[Model]``, ``A | B``."""
    if isinstance(annotation, (ast.Name, ast.Attribute)):
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


def _unpacks_pairwise(target: ast.Tuple | ast.List, value: ast.expr) -> bool:
    return (
        isinstance(value, (ast.Tuple, ast.List))
        and len(target.elts) == len(value.elts)
        and not any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts))
    )


def _returns_without_else(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.If) and not statement.orelse and isinstance(statement.body[-1], ast.Return)


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
