"""What an expression holds, for the assignment graph's walk (``assignments.py``): names read by
Python's scoping rules, attributes, calls (their arguments written down as a ``CallSite``),
containers and comprehensions, ``super()``, ``getattr``/``setattr``, container stores and reads.

A mixin of the walk, which provides the statements' side (binding targets, returns, lambdas).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from graphlint.checks import apis
from graphlint.checks.ast_children import child_nodes
from graphlint.checks.facts import CallSite, Expr, FlowFacts
from graphlint.checks.flow_scopes import FlowScope
from graphlint.checks.scopes import ScopeStack


class FlowExpressions(ScopeStack[FlowScope]):
    facts: FlowFacts
    ordinal: dict[int, int]  # id of a call node → its number in source order
    spreads: list[tuple[int, str]]  # f(*xs) with ``xs`` a function's local: (call ordinal, its key)
    keyword_spreads: list[tuple[int, str]]  # f(**kw) with ``kw`` a function's local: (call ordinal, its key)
    handed: set[str]  # the locals a call is handed as an argument or called a method of (may change them)
    _assign: Callable[[Expr | None, Expr | None], None]
    _bind_target: Callable[..., None]
    _fill: Callable[[ast.expr, Expr | None], None]
    _iterate: Callable[[Expr | None], Expr | None]
    _return: Callable[[Expr | None], None]
    _lambda: Callable[[ast.Lambda], Expr]
    _note_call: Callable[[int, ast.Call, CallSite], None]
    _note_store: Callable[[Expr | None, ast.expr | None], None]
    _note_dict_access: Callable[[ast.Attribute], None]
    never_selected: Callable[[str], bool]

    def _load(self, name: str) -> Expr:
        scope = self.scope
        if name in scope.globals:
            return self._module_name(name)
        if name in scope.locals and name not in scope.nonlocals:
            return scope.known.alias(name) or ["v", scope.key(name)]
        for outer in reversed(self.scopes[:-1]):
            if outer.kind == "class":  # a class body's names are not visible in its methods
                continue
            if outer.kind == "module":
                break
            if name in outer.locals and name not in outer.nonlocals:
                return ["v", outer.key(name)]
        return self._module_name(name)

    def _module_name(self, name: str) -> Expr:
        return ["v", name] if name in self.scopes[0].locals else ["x", name]


    def _expr(self, node: ast.expr) -> Expr | None:
        if isinstance(node, ast.Name):
            return self._load(node.id)
        if isinstance(node, ast.Attribute):
            if node.attr == "__dict__":
                self._note_dict_access(node)
            base = self._expr(node.value)
            return ["a", base, node.attr] if base is not None else None
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Lambda):
            return self._lambda(node)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            elements = [self._expr(e) for e in node.elts]
            if not isinstance(node, ast.Set):
                self.scope.known.literal(node, elements)
            return union(elements)
        if isinstance(node, ast.Dict):
            for key in node.keys:
                if key is not None:
                    self._expr(key)
            values = [self._expr(v) for v in node.values]
            self.scope.known.literal(node, values, keys=node.keys)
            # A table keyed by the platform holds only the entries the checked devices can pick.
            return union([v for k, v in zip(node.keys, values) if not self._never_selected(k)])
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for comprehension in node.generators:
                self._bind_loop(comprehension.target, comprehension.iter)
                for condition in comprehension.ifs:
                    self._expr(condition)
            if isinstance(node, ast.DictComp):
                self._expr(node.key)
                return self._expr(node.value)
            return self._expr(node.elt)
        if isinstance(node, ast.IfExp):
            self._expr(node.test)
            return union([self._expr(node.body), self._expr(node.orelse)])
        if isinstance(node, ast.BoolOp):
            return union([self._expr(v) for v in node.values])
        if isinstance(node, ast.NamedExpr):
            value = self._expr(node.value)
            self._bind_target(node.target, value)
            return value
        if isinstance(node, ast.Subscript):  # layers[0]: an element of the (transparent) container
            self._expr(node.slice)
            base = self._expr(node.value)
            known = self.scope.known.element(node)
            if known is not None and known.value is not None:
                return known.value
            return base
        if isinstance(node, (ast.Starred, ast.Await)):
            return self._expr(node.value)
        if isinstance(node, ast.BinOp) and _is_sequence_arithmetic(node):
            # [a] + helper() + [b], [layer] * n: the list holds what each operand holds
            return union([self._expr(operand) for operand in (node.left, node.right)])
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            if node.value is not None:
                self._return(self._expr(node.value))
            return None
        for child in child_nodes(node):  # operators, comparisons, f-strings: their calls
            if isinstance(child, ast.expr):
                self._expr(child)
        return None


    def _never_selected(self, key: ast.expr | None) -> bool:
        name = dotted(key) if key is not None else None
        return name is not None and "." in name and self.never_selected(name)

    def _bind_loop(self, target: ast.expr, iterable: ast.expr) -> None:
        """``for t in xs``: ``t`` holds what iterating gives. ``for a, b in zip(xs, ys)`` binds
        each name to its own sequence's elements, ``for i, x in enumerate(xs)`` ``x`` to those
        of ``xs``: as one container, a tensor ``a`` would hold the layers of ``ys``."""
        value = self._expr(iterable)
        parts = self._zipped(target, iterable)
        if parts is None:
            self._bind_target(target, self._iterate(value))
            return
        for element, part in zip(target.elts, parts):  # type: ignore[attr-defined]
            self._bind_target(element, None if part is None else self._iterate(part))

    def _zipped(self, target: ast.expr, iterable: ast.expr) -> list[Expr | None] | None:
        """The sequences a loop over ``zip(...)`` / ``enumerate(...)`` hands each name of
        ``target`` (None for ``enumerate``'s count); None if it is no such loop."""
        if not (isinstance(target, (ast.Tuple, ast.List)) and isinstance(iterable, ast.Call)):
            return None
        func, elements = iterable.func, target.elts
        if not isinstance(func, ast.Name) or func.id not in ("zip", "enumerate") or self._load(func.id) != ["x", func.id]:
            return None
        if any(isinstance(e, ast.Starred) for e in (*elements, *iterable.args)):
            return None
        site = self.facts.calls[self.ordinal[id(iterable)]]
        if site is None:
            return None
        if func.id == "zip" and len(site.args) == len(elements):
            return list(site.args)
        if func.id == "enumerate" and len(elements) == 2 and site.args and not iterable.keywords:
            return [None, site.args[0]]
        return None

    def _call(self, node: ast.Call) -> Expr:
        ordinal = self.ordinal[id(node)]
        func = node.func
        self.scope.known.called()
        callee = self._expr(func)
        site = CallSite(scope=self.function_scope.qualname, callee=callee, line=node.lineno)
        root = func
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        site.named = isinstance(func, ast.Name) or (
            isinstance(root, ast.Name) and root.id == self.function_scope.self_name and isinstance(func, ast.Attribute)
        )
        site.text = dotted(func) or (ast.unparse(func) if site.named else "")
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                value = self._expr(arg.value)
                if value is not None:
                    site.star.append(value)
            else:
                site.args.append(self._expr(arg))
        stars = [i for i, arg in enumerate(node.args) if isinstance(arg, ast.Starred)]
        site.star_last = stars == [len(node.args) - 1] and len(site.star) == 1
        spread = node.args[-1].value if site.star_last else None  # type: ignore[attr-defined]
        if isinstance(spread, ast.Name) and self.scope.kind == "function" and spread.id in self.scope.locals:
            self.spreads.append((ordinal, self.scope.key(spread.id)))
        double = [k.value for k in node.keywords if k.arg is None]
        if len(double) == 1 and isinstance(double[0], ast.Name) and self.scope.kind == "function" and double[0].id in self.scope.locals:
            self.keyword_spreads.append((ordinal, self.scope.key(double[0].id)))
        for keyword in node.keywords:
            value = self._expr(keyword.value)
            if keyword.arg is None:
                if value is not None:
                    site.double_star.append(value)
            else:
                site.keywords.append((keyword.arg, value))
        self.facts.calls[ordinal] = site
        self._note_call(ordinal, node, site)
        known = self.scope.known
        reads_only = isinstance(func, ast.Name) and func.id in apis.READS_ITS_ARGUMENTS and callee == ["x", func.id]
        for arg in (*node.args, *(k.value for k in node.keywords)):  # a callee may change what it is given
            if isinstance(arg, ast.Name) and not reads_only:
                known.touched(arg.id)
            if isinstance(arg, ast.Name) and not any(k.arg is None and k.value is arg for k in node.keywords):
                self.handed.add(self.scope.key(arg.id))
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            known.touched(func.value.id, func.attr, node.args[0] if node.args else None)
            self.handed.add(self.scope.key(func.value.id))
        result: Expr = ["c", ordinal]
        if isinstance(func, ast.Name) and func.id == "super" and callee == ["x", "super"]:
            scope = self.function_scope
            if scope.class_name is not None and scope.self_name is not None:
                return ["s", scope.class_name, self._load(scope.self_name)]
        if isinstance(func, ast.Attribute):
            receiver = func.value
            values = [a for a in site.args if a is not None] + site.star
            if func.attr in apis.CONTAINER_STORE_METHODS and values:
                # layers.append(Layer()): the container holds it (insert/setdefault: the last one)
                stored = values[-1:] if func.attr in apis.CONTAINER_STORE_LAST_ARGUMENT else values
                for value in stored:
                    self._fill(receiver, value)
            elif func.attr in apis.CONTAINER_READ_METHODS and callee is not None:
                result = ["u", result, callee[1]]  # d.get(k), d.values(): what the container holds
        if isinstance(func, ast.Attribute) and func.attr in apis.REGISTERING_METHODS and callee is not None and node.args:
            name = node.args[0].value if isinstance(node.args[0], ast.Constant) else None
            if isinstance(name, str):  # ``self.register_buffer("x", None)``: ``self.x`` may be None
                self._note_store(["a", callee[1], name], None)
        if isinstance(func, ast.Name) and callee == ["x", func.id] and func.id in ("getattr", "setattr"):
            name = node.args[1].value if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) else None
            owner = site.args[0] if site.args else None
            if isinstance(name, str) and func.id == "setattr":
                self._note_store(["a", owner or ["?"], name], None)  # of a value not judged: may be None
            if isinstance(name, str) and owner is not None:
                if func.id == "setattr" and len(site.args) > 2:
                    self._assign(["a", owner, name], site.args[2])
                elif func.id == "getattr":
                    result = union([result, ["a", owner, name], *site.args[2:3]]) or result
        return result



_SEQUENCE_DISPLAYS = (ast.List, ast.Tuple, ast.ListComp)


def _is_sequence_arithmetic(node: ast.BinOp) -> bool:
    """``+`` / ``*`` on a list or tuple written in place (somewhere in a chain of ``+``): a
    concatenation or a repetition, not arithmetic on tensors (which carries no project value)."""
    if isinstance(node.op, ast.Mult):
        return isinstance(node.left, _SEQUENCE_DISPLAYS) or isinstance(node.right, _SEQUENCE_DISPLAYS)
    if not isinstance(node.op, ast.Add):
        return False
    operands: list[ast.expr] = [node.left, node.right]
    while operands:
        operand = operands.pop()
        if isinstance(operand, _SEQUENCE_DISPLAYS):
            return True
        if isinstance(operand, ast.BinOp) and isinstance(operand.op, ast.Add):
            operands += [operand.left, operand.right]
    return False


def union(values: list[Expr | None]) -> Expr | None:
    present = [v for v in values if v is not None]
    if not present:
        return None
    return present[0] if len(present) == 1 else ["u", *present]



def dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None
