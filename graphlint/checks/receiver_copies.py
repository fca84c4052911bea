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
methods past ``MAX_RECEIVER_CLASSES`` classes, and methods with a class defined inside. Functions
and lambdas nested in a method, their decorators and the entry points in them are copied with it
(they read its variables). Everything is built from the cached per-file facts, when the graph is
solved.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graphlint.checks.file_tables import per_file
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
    decorations: list[int] = field(default_factory=list)
    entries: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class MethodCopy:
    """One method's body for one receiver class: its nodes named apart from the shared copy's."""

    qualname: str
    owner: str  # the class the method is defined in
    context: str  # ``@file:qualname`` of the receiver class
    calls: frozenset[int]
    implicit: frozenset[int]
    decorations: frozenset[int]

    @property
    def receiver(self) -> str:
        """The receiver class's part of the context (``@file:qualname``; ``""``: none): a copy per
        class of a parameter (``parameter_class_copies.py``) adds ``%file:qualname`` to it, a copy
        per call site (``call_site_copies.py``) ``#file:ordinal``."""
        return self.context.partition("%")[0].partition("#")[0] if self.context.startswith("@") else ""

    @property
    def receiver_class(self) -> Obj | None:
        """The receiver class of a copy per receiver class (None: a copy per call site,
        ``call_site_copies.py``, or per class of a parameter alone)."""
        if not self.receiver:
            return None
        file, _, qualname = self.receiver[1:].partition(":")
        return ("C", int(file), qualname)

    @property
    def name(self) -> str:
        """The qualname the copy's variables are kept under (``Base.forward@3:Gelu``)."""
        return f"{self.qualname}{self.context}"

    def rename(self, qualname: str) -> str:
        """The name in the copy of the method or of a function nested in it."""
        return self.name + qualname[len(self.qualname):]

    def expr(self, expr: Any) -> Any:
        """``expr`` as the copy reads it: its own locals, call results, iterations and nested
        functions (which read the copy's variables)."""
        if not isinstance(expr, list) or not expr:
            return expr
        kind = expr[0]
        if kind == "v":
            key = expr[1]
            return ["v", self.rename(key)] if key.startswith(f"{self.qualname}.") else expr
        if kind == "c":
            return ["c", (expr[1], self.context)] if expr[1] in self.calls else expr
        if kind == "it":
            return ["it", (expr[1], self.context)] if expr[1] in self.implicit else expr
        if kind == "r":
            return ["r", (expr[1], self.context)] if expr[1] in self.decorations else expr
        if kind == "d":
            return ["d", expr[1], self.context] if expr[1].startswith(f"{self.qualname}.") else expr
        if kind in ("self", "g", "x"):
            return expr
        return [kind, *(self.expr(part) for part in expr[1:])]

    def target(self, target: Expr) -> Expr:
        """``target`` as the copy writes it: ``self.x`` (the key ``Base.x``) per receiver class."""
        if target[0] == "v":
            key = target[1]
            rest = key[len(self.owner) + 1:]
            if key.startswith(f"{self.owner}.") and not key.startswith(f"{self.qualname}.") and "." not in rest:
                return ["v", f"{key}{self.receiver}"]
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
    decoration: Callable[..., None]
    entry: Callable[..., None]

    def __init__(self) -> None:
        super().__init__()
        self.copies: dict[tuple[int, str], MethodCopy] = {}  # (file, copy name) → the copy
        self.copy_counts: dict[tuple[int, str], int] = {}  # (file, method) → copies made
        self.scoped_by_file: dict[int, dict[str, Scoped]] = {}

    def copy_for(self, function: Obj, receiver: Obj | None) -> MethodCopy | None:
        """The copy whose nodes a call of ``function`` binds: through ``receiver``, the method's
        copy for the receiver's class (made on first use); for ``("F", file, qualname, copy)``,
        a function nested in a method's copy, that copy. None: the function's own nodes."""
        file, qualname = function[1], function[2]
        if len(function) > 3:
            return self._enclosing_copy(file, qualname, function[3])
        if receiver is None or receiver[0] not in ("I", "C") or qualname not in self.copied_methods[file]:
            return None
        return self.copy_of(file, qualname, qualname.rpartition(".")[0], receiver_context(receiver), MAX_RECEIVER_CLASSES)

    def copy_of(self, file: int, qualname: str, owner: str, context: str, most: int, counted: str = "") -> MethodCopy | None:
        """The copy ``context`` of ``qualname``, made on first use; None past ``most`` copies
        (of those counted under ``counted``: the copies per class of a parameter count apart)."""
        copy = self.copies.get((file, f"{qualname}{context}"))
        if copy is not None:
            return copy
        made = self.copy_counts.get((file, qualname + counted), 0)
        if made >= most:
            return None
        self.copy_counts[file, qualname + counted] = made + 1
        return self._make_copy(file, qualname, owner, context)

    def _make_copy(self, file: int, qualname: str, owner: str, context: str) -> MethodCopy:
        """The copy ``context`` of ``qualname``'s body (with the functions nested in it): its
        statements, calls, decorations and entries bound anew on nodes of its own."""
        by_scope = self.scoped(file)
        scoped = Scoped()
        for scope in (qualname, *self.nested[file].get(qualname, ())):
            found = by_scope.get(scope, Scoped())
            scoped.assigns += found.assigns
            scoped.calls += found.calls
            scoped.implicit += found.implicit
            scoped.decorations += found.decorations
            scoped.entries += found.entries
        copy = MethodCopy(
            qualname, owner, context,
            frozenset(scoped.calls), frozenset(scoped.implicit), frozenset(scoped.decorations),
        )
        self.copies[file, copy.name] = copy
        flow = self.files[file].facts.flow
        for index in sorted(set(scoped.assigns)):
            target, value = flow.assigns[index]
            self.assign(file, copy.target(target), self.compile(file, copy.expr(value)))
        for ordinal in scoped.calls:
            self.call_site(file, ordinal, flow.calls[ordinal], copy)
        for index in scoped.implicit:
            self.implicit_call(file, index, copy)
        for index in scoped.decorations:
            self.decoration(file, index, copy)
        entries = self.files[file].facts.entries
        for index in scoped.entries:
            self.entry(file, index, entries[index].targets, copy)
        return copy

    def _enclosing_copy(self, file: int, qualname: str, context: str) -> MethodCopy | None:
        parts = qualname.split(".")
        for end in range(len(parts) - 1, 0, -1):
            copy = self.copies.get((file, ".".join(parts[:end]) + context))
            if copy is not None:
                return copy
        return None

    def receiver_field(self, klass: Obj, name: str, receiver: Obj) -> int | None:
        """The node of ``klass``'s attribute ``name`` as the copies for ``receiver``'s class wrote
        it (None where no copy can write it: ``klass`` is no base of the project)."""
        if receiver[0] not in ("I", "C") or klass not in self.classes.derived:
            return None
        return self.variable(klass[1], f"{klass[2]}.{name}{receiver_context(receiver)}")

    @per_file
    def nested(self, file: int) -> dict[str, list[str]]:
        """Per file, the functions nested (at any depth) in each function."""
        inner: dict[str, list[str]] = {}
        for name in self.files[file].facts.flow.defs:
            parts = name.split(".")
            for end in range(1, len(parts)):
                inner.setdefault(".".join(parts[:end]), []).append(name)
        return inner

    @per_file
    def copied_methods(self, file: int) -> set[str]:
        """Per file, the methods copied per receiver class: instance methods and classmethods
        of a class others derive from, with no class inside (nested functions and lambdas are
        copied with them)."""
        flow = self.files[file].facts.flow
        nested = self.nested[file]
        # a class defined in a method: its instances would need copies of their own
        kept = {name.rpartition(".")[0] for name, d in flow.defs.items() if d.kind == "class"}
        return {
            name for name, definition in flow.defs.items()
            if definition.kind == "function" and definition.method in ("instance", "class")
            and ("C", file, name.rpartition(".")[0]) in self.classes.derived
            and not any(scope in kept for scope in (name, *nested.get(name, ())))
        }

    def scoped(self, file: int) -> dict[str, Scoped]:
        """Per function of ``file``, what its body contributes (computed on first use)."""
        found = self.scoped_by_file.get(file)
        if found is None:
            found = self.scoped_by_file[file] = scoped_bodies(self.files[file])
        return found


def scoped_bodies(linked: LinkedModule) -> dict[str, Scoped]:
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
    for index, decoration in enumerate(flow.decorations):
        if decoration.scope in functions:
            found.setdefault(decoration.scope, Scoped()).decorations.append(index)
    for index, entry in enumerate(linked.facts.entries):
        if entry.scope in functions and entry.targets:
            found.setdefault(entry.scope, Scoped()).entries.append(index)

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
        elif kind == "r" and isinstance(expr[1], int) and expr[1] < len(flow.decorations):
            into.add(flow.decorations[expr[1]].scope)
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
