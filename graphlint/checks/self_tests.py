"""Tests of a method's ``self`` attributes around its calls and its ``self`` stores, for the
regions walk (``fixed_attributes.py``). A mixin of the assignment graph's walk (``assignments.py``).

``if "dynamic" in self.rope_type: self._dynamic_frequency_update(...)``: the call runs only where
the test holds; ``if self.rope_type == "default": self.rope_init_fn = self.compute_default_rope_parameters``:
that store holds only where its test does. Written down, per call (``FlowFacts.self_call_tests``)
and per ``self.x = ...`` (``FlowFacts.self_stores``), are the tests of the ``if``s around it in its
own function that compare a ``self`` attribute with constants (the body: the test holds; the
``else``: it does not; each conjunct of an ``and`` in its body, each disjunct of an ``or`` in its
``else``), as atoms ``["eq", A, c]`` (``self.A == c``, ``self.A is None`` with ``c`` None),
``["has", A, c]`` (``c in self.A``), ``["in", A, [c, ...]]`` (``self.A in (c, ...)``), each
``[atom, what the test is, the test's line]``. A store
also says where it is (function, line, whether in a loop) and what it stores, where its form
says: ``["m", name]`` (``self.name``), ``["o", dotted]`` (an imported name, or an attribute or
element of one: ``ROPE_INIT_FUNCTIONS[self.rope_type]``), else ``["?"]``. Class-body bindings
are stores too (function: the class). Names stored by ``setattr``, ``delattr``, ``__setattr__``,
``register_buffer`` and friends are kept (``FlowFacts.dynamic_stores``): a constant name as it
is, any name on ``self`` (also through ``__dict__``, ``vars(self)``, ``super().__setattr__``) as
``"Class.*"``. A
function that rebinds the name of its ``self`` says nothing.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from typing import Any

from graphlint.checks.facts import CallSite, Expr, FlowFacts
from graphlint.checks.flow_scopes import FlowScope
from graphlint.checks.scopes import ScopeStack

UNKNOWN_FORM: Expr = ["?"]
# Calls that store an attribute named by an argument: builtins ``(obj, name, ...)``, methods of the
# object ``(name, ...)``, and ``__setattr__`` / ``__delattr__`` (either)
_NAMING_BUILTINS = frozenset({"setattr", "delattr"})
_NAMING_METHODS = frozenset({"register_buffer", "register_parameter", "add_module", "register_module"})
_SETATTR_METHODS = frozenset({"__setattr__", "__delattr__"})  # ``object.__setattr__(self, name, v)``, ``super().…(name, v)``
_CONSTANTS = (str, int, float, bool, type(None))


class SelfTestsWalk(ScopeStack[FlowScope]):
    facts: FlowFacts
    bindings: Counter[str]
    first_values: dict[str, Expr]
    loops: Counter[str]
    # (function, atom, holds, the test's line) of the ``if``s around here; (entry, key of ``self``)
    # to check at the end
    self_tests: list[tuple[str, Expr, bool, int]]
    self_keys: list[tuple[list[Any], str]]
    _load: Callable[[str], Expr]  # flow_expressions.py

    def _push_self_tests(self, test: ast.expr, holds: bool) -> int:
        """Code after this runs where ``test`` is ``holds``: its atoms on ``self`` attributes
        (how many were pushed)."""
        scope = self.function_scope
        if scope.kind != "function" or scope.self_name is None:
            return 0
        found = _atoms(test, holds, scope.self_name)
        self.self_tests.extend((scope.qualname, atom, truth, test.lineno) for atom, truth in found)
        return len(found)

    def _pop_self_tests(self, count: int) -> None:
        del self.self_tests[len(self.self_tests) - count :]

    def _around(self, function: str) -> list[list[Any]]:
        return [[atom, holds, line] for scope, atom, holds, line in self.self_tests if scope == function]

    def _self_key(self) -> str | None:
        name = self.function_scope.self_name
        loaded = self._load(name) if name is not None else None
        return loaded[1] if loaded is not None and loaded[0] == "v" else None

    def _note_self_call(self, ordinal: int, node: ast.Call, site: CallSite) -> None:
        """The tests on ``self`` attributes around the call; the names it stores (``setattr``)."""
        scope = self.function_scope
        around = self._around(scope.qualname) if scope.kind == "function" else []
        key = self._self_key() if around else None
        if around and key is not None:
            self.facts.self_call_tests[ordinal] = around
            self.self_keys.append((around, key))
        func = node.func
        if isinstance(func, ast.Name) and func.id in _NAMING_BUILTINS and site.callee == ["x", func.id]:
            owner, name = (node.args[i] if i < len(node.args) else None for i in (0, 1))
        elif isinstance(func, ast.Attribute) and func.attr in _NAMING_METHODS:
            owner, name = func.value, node.args[0] if node.args else None
        elif isinstance(func, ast.Attribute) and func.attr in _SETATTR_METHODS:
            # the name is the first argument, or the second after the object: any in a method
            named = [arg for arg in node.args[:2] if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
            owner, name = (None, named[0]) if named else (ast.Name(id=scope.self_name or ""), None)
        elif isinstance(func, ast.Name) and func.id == "vars" and site.callee == ["x", "vars"]:
            owner, name = (node.args[0] if node.args else None), None
        else:
            return
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            self._note_dynamic(name.value)
        elif self._is_self(owner):
            self._note_dynamic(f"{scope.class_name}.*")

    def _note_dict_access(self, node: ast.Attribute) -> None:
        """``self.__dict__``: any attribute of ``self`` may be stored through it."""
        if self._is_self(node.value):
            self._note_dynamic(f"{self.function_scope.class_name}.*")

    def _note_dynamic(self, name: str) -> None:
        if name not in self.facts.dynamic_stores:
            self.facts.dynamic_stores.append(name)

    def _is_self(self, node: ast.expr | None) -> bool:
        scope = self.function_scope
        return isinstance(node, ast.Name) and node.id == scope.self_name and scope.class_name is not None

    def _note_self_store(self, attribute: str, line: int, value: ast.expr | None) -> None:
        """A store of ``attribute`` (``"Class.x"``) in a method or class body, with its tests and form."""
        scope = self.function_scope
        in_class = self.scope.kind == "class"
        function = self.scope.qualname if in_class else scope.qualname
        around = [] if in_class else self._around(function)
        entry = [function, line, int(self.loops[function] > 0), self._form(value), around]
        self.facts.self_stores.setdefault(attribute, []).append(entry)
        key = None if in_class else self._self_key()
        if around or entry[3][0] == "m":
            self.self_keys.append((entry, key or ""))

    def _form(self, value: ast.expr | None) -> Expr:
        if isinstance(value, ast.Attribute) and self._is_self(value.value):
            return ["m", value.attr]
        parts: list[str] = []
        while isinstance(value, (ast.Attribute, ast.Subscript)):
            if isinstance(value, ast.Attribute):
                parts.insert(0, value.attr)
            value = value.value
        if isinstance(value, ast.Name) and not self._is_self(value):
            loaded = self._load(value.id)
            if loaded[0] == "v" and "." not in loaded[1]:  # a module-level name: known once bound once
                return ["o", loaded[1], parts]
        return UNKNOWN_FORM

    def _keep_sound_self_facts(self) -> None:
        """Forget what a function that rebinds its ``self`` says; resolve each store's imported
        name (a module-level name bound once, by an import, in a file without ``*`` imports)."""
        for entry, key in self.self_keys:
            if key and self.bindings[key] <= 1:
                continue
            if isinstance(entry[0], str):  # a store
                entry[3], entry[4] = UNKNOWN_FORM, []
            else:
                entry.clear()
        self.facts.self_call_tests = {ordinal: tests for ordinal, tests in self.facts.self_call_tests.items() if tests}
        for stores in self.facts.self_stores.values():
            for entry in stores:
                if entry[3][0] == "o":
                    entry[3] = self._imported(*entry[3][1:])

    def _imported(self, name: str, parts: list[str]) -> Expr:
        first = self.first_values.get(name)
        if self.bindings[name] != 1 or self.facts.star_imports or first is None:
            return UNKNOWN_FORM
        if first[0] == "a" and first[1][0] == "g":
            first = ["g", f"{first[1][1]}.{first[2]}"]
        if first[0] != "g" or first[1].startswith("."):
            return UNKNOWN_FORM
        return ["o", ".".join([first[1], *parts])]


def _atoms(test: ast.expr, holds: bool, self_name: str) -> list[tuple[Expr, bool]]:
    """The atoms that hold (with their truth) where ``test`` is ``holds``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _atoms(test.operand, not holds, self_name)
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) != holds:  # ``not (a and b)``, ``a or b``: no part is known
            return []
        return [found for value in test.values for found in _atoms(value, holds, self_name)]
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return []
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
        if _attribute(right, self_name) is not None:
            left, right = right, left
        name = _attribute(left, self_name)
        constant = _constant(right)
        if name is None or constant is None or (isinstance(op, (ast.Is, ast.IsNot)) and constant[0] is not None):
            return []
        return [(["eq", name, constant[0]], holds == isinstance(op, (ast.Eq, ast.Is)))]
    if isinstance(op, (ast.In, ast.NotIn)):
        positive = holds == isinstance(op, ast.In)
        name = _attribute(right, self_name)
        constant = _constant(left)
        if name is not None and constant is not None and isinstance(constant[0], str):
            return [(["has", name, constant[0]], positive)]
        name = _attribute(left, self_name)
        if name is not None and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            values = [_constant(element) for element in right.elts]
            if all(value is not None for value in values):
                return [(["in", name, [value[0] for value in values]], positive)]  # type: ignore[index]
    return []


def _attribute(node: ast.expr, self_name: str) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == self_name:
        return node.attr
    return None


def _constant(node: ast.expr) -> tuple[Any] | None:
    """``(value,)`` of a constant a test can be judged on exactly (str, number, bool, None)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, _CONSTANTS):
        return (node.value,)
    return None
