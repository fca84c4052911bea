"""A method of a class others derive from, analysed once per class of the object it is called on.

The assignment graph is context-insensitive: one node per parameter. In a method of a shared base
(``CustomOp.forward``, ``LinearBase.forward``) that makes ``self`` every subclass's instances at
once, so ``self._forward_method(x)`` calls every op's ``forward_cuda`` with every op's callers'
tensors, and one web of values reaches every layer. Here such a method gets one copy of its body
per *receiver class* (one level of type sensitivity, Smaragdakis et al., POPL 2011): a call
through an instance (or, for a classmethod, a class) of ``D`` binds the copy for ``D``, whose
parameters, locals, calls and returns are nodes of their own. ``self.x = v`` written in the copy
is kept per receiver class too (``Base.x`` for ``D``), and a lookup of ``x`` on a ``D`` reads it
beside the shared ``Base.x`` (what the shared copy and the other statements store), so no value
is lost. The shared copy stays: it answers calls with no receiver (``Base.forward(self, x)``),
methods past ``MAX_RECEIVER_CLASSES`` classes, and methods that are not copied: those with
nested functions or lambdas (they read the enclosing method's variables by name) or entry points
inside. Everything is built from the cached per-file facts, when the graph is solved.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from graphlint.checks.class_hierarchy import ClassHierarchy
from graphlint.checks.facts import CallSite, Expr
from graphlint.checks.value_graph import LinkedModule, Obj, ValueGraph

# Past this many receiver classes a method's further receivers share its one copy: a base of
# hundreds of classes costs at most this many copies of each method.
MAX_RECEIVER_CLASSES = 128


@dataclass
class Scoped:
    """What a function's body contributes: assignments (by index), calls and implicit calls."""

    assigns: list[int] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    implicit: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class MethodCopy:
    """One method's body for one receiver class: its nodes named apart from the shared copy's."""

    qualname: str
    owner: str  # the class the method is defined in
    context: str  # ``@file:qualname`` of the receiver class
    calls: frozenset[int]
    implicit: frozenset[int]

    @property
    def name(self) -> str:
        """The qualname the copy's variables are kept under (``Base.forward@3:Gelu``)."""
        return f"{self.qualname}{self.context}"

    def expr(self, expr: Any) -> Any:
        """``expr`` as the copy reads it: its own locals, call results and iterations."""
        if not isinstance(expr, list) or not expr:
            return expr
        kind = expr[0]
        if kind == "v":
            key = expr[1]
            return ["v", self.name + key[len(self.qualname):]] if key.startswith(f"{self.qualname}.") else expr
        if kind == "c":
            return ["c", (expr[1], self.context)] if expr[1] in self.calls else expr
        if kind == "it":
            return ["it", (expr[1], self.context)] if expr[1] in self.implicit else expr
        if kind in ("d", "self", "g", "x"):
            return expr
        return [kind, *(self.expr(part) for part in expr[1:])]

    def target(self, target: Expr) -> Expr:
        """``target`` as the copy writes it: ``self.x`` (the key ``Base.x``) per receiver class."""
        if target[0] == "v":
            key = target[1]
            rest = key[len(self.owner) + 1:]
            if key.startswith(f"{self.owner}.") and not key.startswith(f"{self.qualname}.") and "." not in rest:
                return ["v", f"{key}{self.context}"]
        return self.expr(target)


def receiver_context(receiver: Obj) -> str:
    return f"@{receiver[1]}:{receiver[2]}"


class ReceiverCopies(ValueGraph):
    """The copies of base-class methods per receiver class (a mixin of the solver)."""

    files: list[LinkedModule]
    classes: ClassHierarchy
    compile: Callable[..., int | None]
    assign: Callable[[int, Expr, int | None], None]
    call_site: Callable[..., None]
    implicit_call: Callable[..., None]

    def __init__(self) -> None:
        super().__init__()
        self.copies: dict[tuple[int, str], MethodCopy] = {}  # (file, copy name) → the copy
        self.copy_counts: dict[tuple[int, str], int] = {}  # (file, method) → copies made
        self.scoped_by_file: dict[int, dict[str, Scoped]] = {}

    def method_for(self, function: Obj, receiver: Obj | None) -> str:
        """The qualname whose nodes a call of ``function`` through ``receiver`` binds: the copy
        for the receiver's class (made on first use), or the function's own."""
        file, qualname = function[1], function[2]
        if receiver is None or receiver[0] not in ("I", "C") or qualname not in self.copied_methods[file]:
            return qualname
        context = receiver_context(receiver)
        name = f"{qualname}{context}"
        if (file, name) in self.copies:
            return name
        made = self.copy_counts.get((file, qualname), 0)
        if made >= MAX_RECEIVER_CLASSES:
            return qualname
        self.copy_counts[file, qualname] = made + 1
        scoped = self.scoped(file).get(qualname, Scoped())
        copy = MethodCopy(qualname, qualname.rpartition(".")[0], context, frozenset(scoped.calls), frozenset(scoped.implicit))
        self.copies[file, name] = copy
        flow = self.files[file].facts.flow
        for index in scoped.assigns:
            target, value = flow.assigns[index]
            self.assign(file, copy.target(target), self.compile(file, copy.expr(value)))
        for ordinal in scoped.calls:
            self.call_site(file, ordinal, flow.calls[ordinal], copy)
        for index in scoped.implicit:
            self.implicit_call(file, index, copy)
        return name

    def copy_of(self, file: int, name: str) -> MethodCopy | None:
        return self.copies.get((file, name))

    def receiver_field(self, klass: Obj, name: str, receiver: Obj) -> int | None:
        """The node of ``klass``'s attribute ``name`` as the copies for ``receiver``'s class wrote
        it (None where no copy can write it: ``klass`` is no base of the project)."""
        if receiver[0] not in ("I", "C") or klass not in self.classes.derived:
            return None
        return self.variable(klass[1], f"{klass[2]}.{name}{receiver_context(receiver)}")

    @cached_property
    def copied_methods(self) -> list[set[str]]:
        """Per file, the methods copied per receiver class: instance methods and classmethods
        of a class others derive from, with no nested function or lambda and no entry point."""
        found: list[set[str]] = []
        for file, linked in enumerate(self.files):
            defs = linked.facts.flow.defs
            nesting = {name.rpartition(".")[0] for name in defs}
            entries = {entry.scope for entry in linked.facts.entries if entry.targets}
            found.append({
                name for name, definition in defs.items()
                if definition.kind == "function" and definition.method in ("instance", "class")
                and name not in nesting and name not in entries
                and ("C", file, name.rpartition(".")[0]) in self.classes.derived
            })
        return found

    def scoped(self, file: int) -> dict[str, Scoped]:
        """Per function of ``file``, what its body contributes (computed on first use)."""
        found = self.scoped_by_file.get(file)
        if found is None:
            found = self.scoped_by_file[file] = _scoped(self.files[file])
        return found


def _scoped(linked: LinkedModule) -> dict[str, Scoped]:
    flow = linked.facts.flow
    functions = {name for name, d in flow.defs.items() if d.kind == "function"}
    found: dict[str, Scoped] = {}
    calls: list[CallSite | None] = flow.calls
    for ordinal, site in enumerate(calls):
        if site is not None and site.scope in functions:
            found.setdefault(site.scope, Scoped()).calls.append(ordinal)
    for index, implicit in enumerate(flow.implicit):
        if implicit.scope in functions:
            found.setdefault(implicit.scope, Scoped()).implicit.append(index)

    def scopes(expr: Any, into: set[str]) -> None:
        if not isinstance(expr, list) or not expr:
            return
        kind = expr[0]
        if kind == "v":
            owner = expr[1].rpartition(".")[0]
            if owner in functions:
                into.add(owner)
        elif kind == "c" and isinstance(expr[1], int) and expr[1] < len(calls) and calls[expr[1]] is not None:
            into.add(calls[expr[1]].scope)  # type: ignore[union-attr]
        elif kind == "it" and isinstance(expr[1], int) and expr[1] < len(flow.implicit):
            into.add(flow.implicit[expr[1]].scope)
        else:
            for part in expr[1:]:
                scopes(part, into)

    for index, (target, value) in enumerate(flow.assigns):
        into: set[str] = set()
        scopes(target, into)
        scopes(value, into)
        for function in into & functions:
            found.setdefault(function, Scoped()).assigns.append(index)
    return found
