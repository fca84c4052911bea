"""Calls no call site shows: decorators, entry points, ``raise Error`` and iteration.

A decorator is called with the function it wraps, and what it returns is what the name holds;
an entry point (``torch.compile(f)``, a capture) calls what it is handed, with values graphlint
cannot see; ``raise Error`` constructs ``Error``; ``for x in obj`` runs ``__iter__`` and
``__next__``. Each can be written in a method's copy for one receiver class
(``receiver_copies.py``): then it reads the copy's nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from graphlint.checks.file_tables import per_file
from graphlint.checks import apis
from graphlint.checks.facts import Expr
from graphlint.checks.receiver_copies import MethodCopy
from graphlint.checks.value_graph import EXTERNAL_VALUE, CallArgs, CallGraph, LinkedModule, Obj, ValueGraph, instance_of


def _reads(copy: MethodCopy | None) -> Callable[[Any], Any]:
    return (lambda expr: expr) if copy is None else copy.expr


DECORATION = "decoration"  # marks a decoration's call key (``is_decoration``)


def is_decoration(site: Any) -> bool:
    """Whether a call key is a decoration's: the decorator called with what it decorates."""
    return isinstance(site, tuple) and len(site) == 5 and site[0] == "implicit" and site[3] == DECORATION


def _keyed(index: int, copy: MethodCopy | None) -> Any:
    return index if copy is None else (index, copy.context)


class ImplicitCalls(ValueGraph):
    """The implicit half of the solver's calls (a mixin: ``call``, ``compile`` come from it)."""

    files: list[LinkedModule]
    graph: CallGraph
    site_args: dict[tuple[Any, ...], CallArgs]
    receivers: dict[tuple[Any, ...], int]
    compile: Callable[..., int | None]
    call: Callable[[Any, Obj, CallArgs, int], None]
    defines: Callable[[Obj, str], bool]
    dispatched: Callable[[Obj], list[str]]
    classes: Any
    flow: Callable[[int], Any]
    decorations_made: list[tuple[int, int, MethodCopy | None]]

    @per_file
    def entry_decorator_lines(self, file: int) -> set[int]:
        """Per file, the lines of decorators the configuration names as entry points."""
        entries = self.files[file].facts.entries
        return {e.line for e in entries if e.via == "config" and any(t[0] == "def" for t in e.targets)}

    def decoration(self, file: int, index: int, copy: MethodCopy | None = None) -> None:
        decoration = self.files[file].facts.flow.decorations[index]
        callee = self.decorator_node(file, index, copy)
        value = self.compile(file, _reads(copy)(decoration.value))
        out = self.decorated_result(file, _keyed(index, copy))
        self.decorations_made.append((file, index, copy))
        if value is None:
            return
        if decoration.line in self.entry_decorator_lines[file]:
            # An entry point named by the configuration (a framework's compile decorator) means
            # what the configuration says: it compiles the class or function and hands it back.
            # Its body is not followed: one decorator shared by every model of a project would
            # carry each model's constructor and call arguments to all the others (the analysis
            # is context-insensitive), and the patches it makes (``cls.__call__ = ...``) would
            # stand in front of the ``forward`` the entry already names.
            self.edge(value, out)
            return
        # each decoration a call of its own: @merge over @merge
        key = ("implicit", file, decoration.scope, DECORATION, _keyed(index, copy))
        args = CallArgs([value])

        def react(objs: Iterable[Obj]) -> None:
            for obj in objs:
                if obj[0] == "X":  # an outside decorator: assumed to hand the function back
                    if obj[1]:
                        self.graph.implicit_calls.setdefault((file, decoration.scope), set()).add(obj[1])
                    self.edge(value, out)
                else:
                    self.call(key, obj, args, out)

        self.watch(callee, react)

    def decorator_node(self, file: int, index: int, copy: MethodCopy | None = None) -> int:
        key = (-1 - file, _keyed(index, copy))  # decorator expressions get nodes of their own
        node = self.results.get(key)
        if node is None:
            node = self.results[key] = self.node()
            decorator = self.files[file].facts.flow.decorations[index].decorator
            self.edge(self.compile(file, _reads(copy)(decorator)), node)
        return node

    def undecided_decorations(self) -> bool:
        """A decorator that resolved to nothing hands its function back unchanged; False when
        none is left undecided."""
        undecided = [
            (file, index, copy) for file, index, copy in self.decorations_made
            if not self.values[self.decorator_node(file, index, copy)]
            and not self.values[self.decorated_result(file, _keyed(index, copy))]
        ]
        for file, index, copy in undecided:
            value = self.compile(file, _reads(copy)(self.files[file].facts.flow.decorations[index].value))
            self.edge(value, self.decorated_result(file, _keyed(index, copy)))
        return bool(undecided) and not all(
            self.values[self.decorated_result(f, _keyed(i, c))] for f, i, c in undecided
        )

    # ---- entry points -----------------------------------------------------------------------
    def entry(self, file: int, index: int, targets: list[Expr], copy: MethodCopy | None = None) -> None:
        """An entry point calls what it is handed (dynamo and capture run it): a function, a
        bound method, a module instance, or a decorated class's instances."""
        for target in targets:
            node = None
            site_key = (file, target[1]) if copy is None or target[1] not in copy.calls else (file, target[1], copy.context)
            if target[0] == "arg":
                args = self.site_args.get(site_key)
                node = args.target() if args else None
            elif target[0] == "receiver":
                node = self.receivers.get(site_key)
            elif target[0] == "def":
                node = self.compile(file, _reads(copy)(["d", target[1]]))
            if node is None:
                continue
            # in a method's copy the entry's site names the copy: whether its compile call runs
            # is decided per copy (``parameter_constants.py``)
            site = ("entry", file, index) if copy is None else ("entry", file, index, copy.context)
            out = self.node()
            # dynamo and capture call it with what the framework passes: values graphlint
            # cannot see, so every parameter holds an unknown value (not nothing)
            unknown = self.constant(EXTERNAL_VALUE)
            given = CallArgs(star=[unknown], double_star=[unknown])
            self.watch(node, lambda objs, site=site, out=out: [self.call(site, self.called_as_entry(o), given, out) for o in objs])
            if target[0] == "def" and self.flow(file).defs[target[1]].kind == "class":
                for method in self.entry_methods(("C", file, target[1])):
                    self.call(site, method, given, out)

    def entry_methods(self, cls: Obj) -> list[Obj]:
        """What an entry runs on the instances of a class it names (``forward``, and the
        methods ``dispatch`` names), bound to an instance, by their ``def``s found through the
        MRO at once. Through the value flow the same methods arrive only after the decorators
        on them are decided (``@torch.no_grad()`` on every sglang model's ``forward``), which
        waits for the whole solve: a solve stopped by its budget never ran them (sglang's
        EntryClass roots: 61 of 224 started)."""
        instance = instance_of(cls)
        names = [name for name in apis.INSTANCE_CALL_METHODS if self.defines(instance, name)][:1]
        names += [name for name in self.dispatched(instance) if self.defines(instance, name)]
        methods = [self.method_of(instance, name) for name in names]
        return [method for method in methods if method[0] == "B"]

    def called_as_entry(self, obj: Obj) -> Obj:
        """A class stands for its instances, a method decorated in its class body for the method
        bound to an instance of that class."""
        if obj[0] == "F" and self.files[obj[1]].facts.flow.defs[obj[2]].method == "instance":
            return ("B", obj, ("I", obj[1], obj[2].rsplit(".", 1)[0]))
        return instance_of(obj)

    # ---- raise, iteration -------------------------------------------------------------------
    def implicit_call(self, file: int, index: int, copy: MethodCopy | None = None) -> None:
        implicit = self.files[file].facts.flow.implicit[index]
        value = self.compile(file, _reads(copy)(implicit.value))
        if value is None:
            return
        site: tuple[Any, ...] = ("implicit", file, implicit.scope) + (() if copy is None else (copy.context,))
        if implicit.kind == "raise":
            self.watch(value, lambda objs: [self.call(site, o, CallArgs(), self.node()) for o in objs if o[0] == "C"])
            return
        out = self.iteration_result(file, _keyed(index, copy))

        def iterate(objs: Iterable[Obj]) -> None:
            for obj in objs:
                if obj[0] == "I" and self.defines(obj, "__iter__"):
                    iterator = self.node()
                    self.call(site, self.method_of(obj, "__iter__"), CallArgs(), iterator)
                    self.watch(iterator, lambda its: [
                        self.call(site, self.method_of(it, "__next__"), CallArgs(), out)
                        for it in its if it[0] == "I" and self.defines(it, "__next__")
                    ])

        self.watch(value, iterate)

    def method_of(self, instance: Obj, name: str) -> Obj:
        """The method ``name`` of ``instance``'s class (through its MRO), bound to it."""
        for klass in self.classes.mro(("C", instance[1], instance[2])):
            if klass[0] == "C" and f"{klass[2]}.{name}" in self.flow(klass[1]).defs:
                return ("B", ("F", klass[1], f"{klass[2]}.{name}"), instance)
        return ("X", "")
