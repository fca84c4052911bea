"""The assignment graph of a whole project, solved to a fixed point: which functions each call runs.

Every file contributes its statements (``facts.FlowFacts``, extracted and cached per file by
``assignments.py``); here they become one graph, in the spirit of PyCG (Salis et al., ICSE 2021):
context-insensitive, inter-procedural, field-sensitive on attributes by namespace (``self.x`` in
any method of ``Block`` is the one node ``Block.x``). Nodes hold sets of *objects* (functions,
classes, instances, bound methods, modules, names outside the project) and values flow along
edges until nothing changes. Calls are edges that appear as their callees become known: calling a
function makes its parameters receive the arguments (positional, keyword, ``*args``/``**kwargs``)
and the call receive its returns; calling a class constructs an instance and runs ``__init__``;
calling an instance runs ``__call__`` or, for a torch module, ``forward``; attributes are looked
up through the class's C3 MRO (the first class that defines them wins), ``super()`` continues
after the class it is written in; decorators receive the function they wrap (an unknown decorator
hands it back unchanged); ``functools.partial`` remembers its arguments. Where nothing is known
the answer is nothing: an unresolved call is better than a wrong one.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Union

from graphlint.checks import apis
from graphlint.checks.facts import CallSite, Expr, FileFacts
from graphlint.checks.presets import glob_pattern

Obj = tuple  # ("F"|"C"|"I", file, qualname), ("B", function, receiver), ("S", file, class, receiver),
#             ("M", module), ("X", dotted), ("P", file, ordinal)
EXTERNAL_VALUE: Obj = ("X", "")  # what a call outside the project returns
_MAX_DEPTH = 16
# Bounds that keep the fixed point a matter of seconds on any tree (sglang's srt, transformers'
# models/). A node holding more than VALUE_CAP values is *saturated*: it takes no more, and the
# calls through it count as unresolved (what it already holds are still values it can have, so
# no link is wrong; the region may be incomplete). Outside names are collapsed into one outside
# value past OUTSIDE_CAP in a node: they resolve to no project function either way. Past
# WORK_BUDGET values delivered the solve stops, and the run says so (``CallGraph.stopped``).
VALUE_CAP = 256
OUTSIDE_CAP = 16
WORK_BUDGET = 3_000_000


@dataclass(frozen=True)
class FunctionKey:
    file: int  # index into the project's files
    qualname: str


Target = Union[FunctionKey, str]  # a function of the project, or a dotted name outside it


@dataclass
class LinkedModule:
    """What the solver needs of one file."""

    module: str
    is_package: bool
    facts: FileFacts


@dataclass
class _Args:
    positional: list[int | None] = field(default_factory=list)
    star: list[int] = field(default_factory=list)
    keywords: list[tuple[str, int | None]] = field(default_factory=list)
    double_star: list[int] = field(default_factory=list)


@dataclass
class CallGraph:
    """What the solved graph answers."""

    callees: dict[tuple[int, int], dict[Target, str]]  # (file, call ordinal) → target → "call" | "init"
    resolved: set[tuple[int, int]]  # calls whose callee holds any value at all
    # (file, scope) → what runs there without a call site: decorators, ``raise Error``, iteration
    implicit_calls: dict[tuple[int, str], set[Target]]
    entry_targets: dict[tuple[int, int], list[FunctionKey]]  # (file, entry index) → functions
    # (file, entry index) → outside names it hands over (a library's function compiled as is)
    entry_outside: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    stopped: int | None = None  # the steps after which the work budget stopped the solve
    saturated: int = 0  # nodes that reached VALUE_CAP values and took no more

    def notice(self) -> str | None:
        """What a run must say when the bounds cut the solve short (None when they did not)."""
        if self.stopped is not None:
            return f"value flow stopped after {self.stopped:,} steps; regions may be incomplete"
        if self.saturated:
            return f"value flow: {self.saturated:,} value set(s) past {VALUE_CAP} values left unresolved; regions may be incomplete"
        return None


def solve(files: list[LinkedModule], dispatch: dict[str, tuple[str, ...]] | None = None) -> CallGraph:
    """``dispatch``: class (dotted name, globs) → methods an instance call runs besides ``forward``."""
    # The graph is millions of small sets and tuples and makes no cycles the cyclic collector
    # must find: its passes over the growing heap were a third of the solve on transformers'
    # models/ (2,544 files).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _Solver(files, dispatch or {}).run()
    finally:
        if collecting:
            gc.enable()


def absolute_name(name: str, module: str, is_package: bool) -> str:
    """``.helpers.norm`` written in ``pkg.model`` → ``pkg.helpers.norm`` (absolute names pass)."""
    level = len(name) - len(name.lstrip("."))
    if level == 0:
        return name
    package = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        package = package[: len(package) - (level - 1)]
    rest = name[level:]
    return ".".join([*package, rest] if rest else package)


class _Solver:
    def __init__(self, files: list[LinkedModule], dispatch: dict[str, tuple[str, ...]]) -> None:
        self.files = files
        self.dispatch = [(glob_pattern(name), methods) for name, methods in dispatch.items()]
        self.by_module: dict[str, list[int]] = {}
        self.packages: set[str] = set()  # every module and package name, namespace packages too
        for index, linked in enumerate(files):
            self.by_module.setdefault(linked.module, []).append(index)
            parts = linked.module.split(".")
            self.packages.update(".".join(parts[: i + 1]) for i in range(len(parts)))
        self.declared: list[set[str]] = []
        self.assigned: list[dict[str, list[Expr]]] = []
        for linked in files:
            flow = linked.facts.flow
            by_var: dict[str, list[Expr]] = {}
            for target, value in flow.assigns:
                if target[0] == "v":
                    by_var.setdefault(target[1], []).append(value)
            self.assigned.append(by_var)
            self.declared.append(set(by_var) | set(flow.defs))
        self.values: list[set[Obj]] = []
        self.successors: list[set[int]] = []
        self.watchers: list[list[Callable[[Iterable[Obj]], None]]] = []
        self.pending: list[tuple[int, set[Obj]]] = []
        self.variables: dict[tuple[int, str], int] = {}
        self.constants: dict[Obj, int] = {}
        self.attributes: dict[tuple[Obj, str], int] = {}
        self.loads: dict[tuple[int, str], int] = {}
        self.results: dict[tuple[int, int], int] = {}
        self.decorated: dict[tuple[int, int], int] = {}
        self.iterated: dict[tuple[int, int], int] = {}
        self.receivers: dict[tuple[int, int], int] = {}  # model.compile(): the node of ``model``
        self.site_args: dict[tuple[int, int], _Args] = {}
        self.called: set[tuple[Any, Obj]] = set()
        self.callee_nodes: dict[tuple[int, int], int] = {}
        self.graph = CallGraph({}, set(), {}, {})
        self.saturated: set[int] = set()
        self.steps = 0
        self.stopped = False
        self._mro: dict[Obj, list[Obj]] = {}
        self._static: dict[tuple[int, str], list[Obj]] = {}

    # ---- the graph --------------------------------------------------------------------------
    def node(self) -> int:
        self.values.append(set())
        self.successors.append(set())
        self.watchers.append([])
        return len(self.values) - 1

    def add(self, node: int, objects: Iterable[Obj]) -> None:
        if self.stopped or node in self.saturated:
            return
        held = self.values[node]
        new = set(objects) - held
        if not new:
            return
        if len(held) + len(new) > OUTSIDE_CAP:  # many outside names: one outside value
            outside = {o for o in new if o[0] == "X" and o[1]}
            if outside and sum(1 for o in held if o[0] == "X") + len(outside) > OUTSIDE_CAP:
                new = (new - outside) | ({EXTERNAL_VALUE} - held)
                if not new:
                    return
        if len(held) + len(new) > VALUE_CAP:
            self.saturated.add(node)
            return
        self.steps += len(new)
        if self.steps > WORK_BUDGET:
            self.stopped = True
            self.pending.clear()
            return
        held |= new
        self.pending.append((node, new))

    def edge(self, source: int | None, target: int) -> None:
        if source is None or source == target or target in self.successors[source]:
            return
        self.successors[source].add(target)
        if self.values[source]:
            self.add(target, self.values[source])

    def watch(self, node: int, react: Callable[[Iterable[Obj]], None]) -> None:
        self.watchers[node].append(react)
        if self.values[node]:
            react(list(self.values[node]))

    def propagate(self) -> None:
        while self.pending and not self.stopped:
            node, new = self.pending.pop()
            for successor in list(self.successors[node]):
                self.add(successor, new)
            for react in list(self.watchers[node]):
                self.steps += 1
                react(new)

    def constant(self, obj: Obj) -> int:
        node = self.constants.get(obj)
        if node is None:
            node = self.constants[obj] = self.node()
            self.add(node, (obj,))
        return node

    def variable(self, file: int, key: str) -> int:
        node = self.variables.get((file, key))
        if node is None:
            node = self.variables[file, key] = self.node()
        return node

    def result(self, file: int, ordinal: int) -> int:
        node = self.results.get((file, ordinal))
        if node is None:
            node = self.results[file, ordinal] = self.node()
        return node

    # ---- the run ----------------------------------------------------------------------------
    @cached_property
    def derived(self) -> set[Obj]:
        """The project's classes that another class of the project derives from."""
        bases: set[Obj] = set()
        for file, linked in enumerate(self.files):
            for qualname, definition in linked.facts.flow.defs.items():
                if definition.kind == "class":
                    bases.update(self.mro(("C", file, qualname))[1:])
        return bases

    def run(self) -> CallGraph:
        for file, linked in enumerate(self.files):
            flow = linked.facts.flow
            for target, value in flow.assigns:
                self.assign(file, target, self.compile(file, value))
            for ordinal, site in enumerate(flow.calls):
                if site is not None:
                    self.call_site(file, ordinal, site)
        for file, linked in enumerate(self.files):
            for index, decoration in enumerate(linked.facts.flow.decorations):
                self.decoration(file, index)
            for index, entry in enumerate(linked.facts.entries):
                self.entry(file, index, entry.targets)
            for index in range(len(linked.facts.flow.implicit)):
                self.implicit_call(file, index)
        self.propagate()
        while True:  # a decorator that resolved to nothing hands its function back unchanged
            undecided = [
                (file, index)
                for file, linked in enumerate(self.files)
                for index, decoration in enumerate(linked.facts.flow.decorations)
                if not self.values[self._decorator_node(file, index)]
                and not self.values[self.decorated_result(file, index)]
            ]
            for file, index in undecided:
                value = self.compile(file, self.files[file].facts.flow.decorations[index].value)
                self.edge(value, self.decorated_result(file, index))
            self.propagate()
            if self.stopped or not undecided or all(self.values[self.decorated_result(f, i)] for f, i in undecided):
                break
        self.graph.resolved = {
            key for key, node in self.callee_nodes.items() if self.values[node] and node not in self.saturated
        }
        self.graph.stopped = self.steps if self.stopped else None
        self.graph.saturated = len(self.saturated)
        for file, linked in enumerate(self.files):
            for index in range(len(linked.facts.entries)):
                targets = self.graph.callees.pop(("entry", file, index), {})  # type: ignore[call-overload]
                self.graph.entry_targets[file, index] = [
                    t for t, kind in targets.items() if isinstance(t, FunctionKey) and kind == "call"
                ]
                self.graph.entry_outside[file, index] = [t for t in targets if isinstance(t, str)]
        return self.graph

    def assign(self, file: int, target: Expr, value: int | None) -> None:
        if value is None:
            return
        if target[0] == "v":
            self.edge(value, self.variable(file, target[1]))
        elif target[0] == "a":
            owner = self.compile(file, target[1])
            if owner is not None:
                name = target[2]
                self.watch(owner, lambda objs: [self.store(obj, name, value) for obj in objs])

    def store(self, obj: Obj, name: str, value: int) -> None:
        """``obj.name = value`` where ``obj`` is known only when the graph runs."""
        if obj[0] in ("I", "C"):
            self.edge(value, self.variable(obj[1], f"{obj[2]}.{name}"))
            self.declared[obj[1]].add(f"{obj[2]}.{name}")
        elif obj[0] == "M":
            for file in self.by_module.get(obj[1], ()):
                self.edge(value, self.variable(file, name))
                self.declared[file].add(name)

    # ---- expressions ------------------------------------------------------------------------
    def compile(self, file: int, expr: Expr | None, depth: int = 0) -> int | None:
        if expr is None or depth > _MAX_DEPTH * 8:
            return None
        kind = expr[0]
        if kind == "v":
            return self.variable(file, expr[1])
        if kind == "c":
            return self.result(file, expr[1])
        if kind == "r":
            return self.decorated_result(file, expr[1])
        if kind == "it":
            return self.iteration_result(file, expr[1])
        if kind in ("d", "self"):
            definition = self.files[file].facts.flow.defs.get(expr[1])
            if definition is None:
                return None
            if kind == "self":
                # A method's ``self`` defaults to an instance of its class only where no class
                # derives from it: in a base class, ``self`` is what its callers pass, so that
                # ``self.head()`` in ``Base.forward`` runs the subclass's ``head``.
                return None if ("C", file, expr[1]) in self.derived else self.constant(("I", file, expr[1]))
            return self.constant(("C" if definition.kind == "class" else "F", file, expr[1]))
        if kind == "g":
            return self.global_name(file, expr[1])
        if kind == "x":
            return self.unbound_name(file, expr[1])
        if kind == "a":
            base = self.compile(file, expr[1], depth + 1)
            return None if base is None else self.attribute_of(base, expr[2])
        if kind == "s":
            receiver = self.compile(file, expr[2], depth + 1)
            if receiver is None:
                return None
            out = self.node()
            cls = expr[1]
            self.watch(receiver, lambda objs: self.add(out, [("S", file, cls, r) for r in objs if r[0] in ("I", "C")]))
            return out
        if kind == "n":  # an annotation: an instance of the class it names
            named = self.compile(file, expr[1], depth + 1)
            if named is None:
                return None
            out = self.node()
            self.watch(named, lambda objs: self.add(out, [_instance_of(o) for o in objs if o[0] == "C"]))
            return out
        if kind == "u":
            out = self.node()
            for part in expr[1:]:
                self.edge(self.compile(file, part, depth + 1), out)
            return out
        return None

    def attribute_of(self, base: int, name: str) -> int:
        """The node of ``base.name``: one per base node and name (``x.view`` written ten times in
        a function is one node)."""
        out = self.loads.get((base, name))
        if out is None:
            out = self.loads[base, name] = self.node()
            self.watch(base, lambda objs: [self.edge(self.attribute(obj, name), out) for obj in objs])
        return out

    def global_name(self, file: int, dotted: str) -> int | None:
        linked = self.files[file]
        name = absolute_name(dotted, linked.module, linked.is_package)
        if not name:
            return None
        parts = name.split(".")
        for split in range(len(parts), 0, -1):
            module = ".".join(parts[:split])
            if module in self.packages:
                node = self.constant(("M", module))
                for attr in parts[split:]:
                    node = self.attribute_of(node, attr)
                return node
        return self.constant(("X", name))

    def unbound_name(self, file: int, name: str) -> int:
        """A name the file never binds: a builtin, or one of its star imports."""
        stars = self.files[file].facts.flow.star_imports
        if stars:
            out = self.node()
            for star in stars:
                module = self.global_name(file, star)
                if module is not None:
                    self.watch(module, lambda objs: [self.edge(self.attribute(o, name), out) for o in objs if o[0] == "M"])
            return out
        return self.constant(("X", f"builtins.{name}"))

    def iteration_result(self, file: int, index: int) -> int:
        node = self.iterated.get((file, index))
        if node is None:
            node = self.iterated[file, index] = self.node()
        return node

    def implicit_call(self, file: int, index: int) -> None:
        implicit = self.files[file].facts.flow.implicit[index]
        value = self.compile(file, implicit.value)
        if value is None:
            return
        site = ("implicit", file, implicit.scope)
        if implicit.kind == "raise":
            self.watch(value, lambda objs: [self.call(site, o, _Args(), self.node()) for o in objs if o[0] == "C"])
            return
        out = self.iteration_result(file, index)

        def iterate(objs: Iterable[Obj]) -> None:
            for obj in objs:
                if obj[0] == "I" and self.defines(obj, "__iter__"):
                    iterator = self.node()
                    self.call(site, self.method_of(obj, "__iter__"), _Args(), iterator)
                    self.watch(iterator, lambda its: [
                        self.call(site, self.method_of(it, "__next__"), _Args(), out)
                        for it in its if it[0] == "I" and self.defines(it, "__next__")
                    ])

        self.watch(value, iterate)

    def method_of(self, instance: Obj, name: str) -> Obj:
        """The method ``name`` of ``instance``'s class (through its MRO), bound to it."""
        for klass in self.mro(("C", instance[1], instance[2])):
            if klass[0] == "C" and f"{klass[2]}.{name}" in self.flow(klass[1]).defs:
                return ("B", ("F", klass[1], f"{klass[2]}.{name}"), instance)
        return ("X", "")

    def flow(self, file: int) -> Any:
        return self.files[file].facts.flow

    def decorated_result(self, file: int, index: int) -> int:
        node = self.decorated.get((file, index))
        if node is None:
            node = self.decorated[file, index] = self.node()
        return node

    # ---- attributes -------------------------------------------------------------------------
    def attribute(self, obj: Obj, name: str, depth: int = 0) -> int:
        key = (obj, name)
        node = self.attributes.get(key)
        if node is not None:
            return node
        node = self.attributes[key] = self.node()
        kind = obj[0]
        if kind == "M":
            module = obj[1]
            for file in self.by_module.get(module, ()):
                if name in self.declared[file]:
                    self.edge(self.variable(file, name), node)
                elif self.files[file].facts.flow.star_imports and depth < _MAX_DEPTH:
                    for star in self.files[file].facts.flow.star_imports:
                        linked = self.files[file]
                        star_module = absolute_name(star, linked.module, linked.is_package)
                        if star_module in self.packages:
                            self.edge(self.attribute(("M", star_module), name, depth + 1), node)
            if f"{module}.{name}" in self.packages:
                self.add(node, [("M", f"{module}.{name}")])
        elif kind in ("I", "C"):
            self.member(("C", obj[1], obj[2]), name, obj, node, skip_to=None)
        elif kind == "S":
            receiver = obj[3]
            self.member(("C", receiver[1], receiver[2]), name, receiver, node, skip_to=("C", obj[1], obj[2]))
        elif kind == "X" and obj[1] and obj[1].count(".") < _MAX_DEPTH:
            self.add(node, [("X", f"{obj[1]}.{name}")])
        elif kind == "X":  # past the depth too: an attribute of an outside value is outside
            self.add(node, [EXTERNAL_VALUE])
        return node

    def member(self, cls: Obj, name: str, receiver: Obj, out: int, skip_to: Obj | None) -> None:
        """``receiver.name`` looked up on ``cls``'s MRO (after ``skip_to`` for ``super()``)."""
        order = self.mro(cls)
        if skip_to is not None:
            order = order[order.index(skip_to) + 1 :] if skip_to in order else []
        for klass in order:
            if klass[0] == "C" and f"{klass[2]}.{name}" in self.declared[klass[1]]:
                source = self.variable(klass[1], f"{klass[2]}.{name}")
                self.watch(source, lambda objs: self.bind_member(objs, receiver, out))
                return
        for klass in order:
            if klass[0] == "X" and klass[1] != "builtins.object":
                self.add(out, [("X", f"{klass[1]}.{name}")])
                return

    def bind_member(self, objs: Iterable[Obj], receiver: Obj, out: int) -> None:
        """Functions read through an instance become bound methods; a property gives what its
        getter returns."""
        plain = []
        for obj in objs:
            method = self.files[obj[1]].facts.flow.defs[obj[2]].method if obj[0] == "F" else None
            if method == "instance" and receiver[0] == "I":
                plain.append(("B", obj, receiver))
            elif method == "class":
                plain.append(("B", obj, ("C", receiver[1], receiver[2])))
            elif method == "property" and receiver[0] == "I":
                self.edge(self.variable(obj[1], f"{obj[2]}.<return>"), out)
            else:
                plain.append(obj)
        self.add(out, plain)

    def mro(self, cls: Obj) -> list[Obj]:
        """C3 linearisation over the bases graphlint can name (project classes and outside names)."""
        found = self._mro.get(cls)
        if found is not None:
            return found
        self._mro[cls] = [cls]  # a cycle of bases ends here
        if cls[0] != "C":
            return [cls]
        bases = [b for expr in self.files[cls[1]].facts.flow.defs[cls[2]].bases for b in self.static(cls[1], expr)]
        bases = [b for b in dict.fromkeys(bases) if b[0] in ("C", "X") and b != cls]
        sequences = [list(self.mro(b)) for b in bases] + [list(bases)]
        order = [cls]
        while any(sequences):
            sequences = [s for s in sequences if s]
            head = next((s[0] for s in sequences if not any(s[0] in t[1:] for t in sequences)), sequences[0][0])
            order.append(head)
            sequences = [[c for c in s if c != head] for s in sequences]
        self._mro[cls] = order
        return order

    def static(self, file: int, expr: Expr, depth: int = 0) -> list[Obj]:
        """What a base-class expression names, without running the graph (bases decide lookups)."""
        if depth > _MAX_DEPTH:
            return []
        kind = expr[0]
        if kind == "d":
            definition = self.files[file].facts.flow.defs.get(expr[1])
            return [("C", file, expr[1])] if definition is not None and definition.kind == "class" else []
        if kind == "v":
            return [o for value in self.assigned[file].get(expr[1], ()) for o in self.static(file, value, depth + 1)]
        if kind == "r":
            decorations = self.files[file].facts.flow.decorations
            return self.static(file, decorations[expr[1]].value, depth + 1) if expr[1] < len(decorations) else []
        if kind == "x":
            return [("X", f"builtins.{expr[1]}")]
        if kind == "g":
            linked = self.files[file]
            return self.static_dotted(absolute_name(expr[1], linked.module, linked.is_package), depth + 1)
        if kind == "a":
            return [o for base in self.static(file, expr[1], depth + 1) for o in self.static_attribute(base, expr[2], depth + 1)]
        return []

    def static_dotted(self, name: str, depth: int) -> list[Obj]:
        parts = name.split(".")
        for split in range(len(parts), 0, -1):
            module = ".".join(parts[:split])
            if module in self.packages:
                found: list[Obj] = [("M", module)]
                for attr in parts[split:]:
                    found = [o for base in found for o in self.static_attribute(base, attr, depth + 1)]
                return found
        return [("X", name)]

    def static_attribute(self, obj: Obj, name: str, depth: int) -> list[Obj]:
        key = (obj[1], f"{obj[2]}.{name}") if obj[0] == "C" else None
        if obj[0] == "M":
            if f"{obj[1]}.{name}" in self.packages:
                return [("M", f"{obj[1]}.{name}")]
            return [o for file in self.by_module.get(obj[1], ()) for o in self.static(file, ["v", name], depth + 1)]
        if key is not None:
            return self.static(key[0], ["v", key[1]], depth + 1)
        if obj[0] == "X":
            return [("X", f"{obj[1]}.{name}")]
        return []

    # ---- calls ------------------------------------------------------------------------------
    def call_site(self, file: int, ordinal: int, site: CallSite) -> None:
        callee = site.callee
        if callee is not None and callee[0] == "a":
            receiver = self.compile(file, callee[1])
            if receiver is not None:
                self.receivers[file, ordinal] = receiver
        callee_node = self.compile(file, callee)
        args = _Args(
            [self.compile(file, a) for a in site.args],
            [n for n in (self.compile(file, s) for s in site.star) if n is not None],
            [(name, self.compile(file, value)) for name, value in site.keywords],
            [n for n in (self.compile(file, d) for d in site.double_star) if n is not None],
        )
        self.site_args[file, ordinal] = args
        if callee_node is None:
            return
        self.callee_nodes[file, ordinal] = callee_node
        out = self.result(file, ordinal)
        key = (file, ordinal)
        self.watch(callee_node, lambda objs: [self.call(key, obj, args, out) for obj in objs])

    def decoration(self, file: int, index: int) -> None:
        decoration = self.files[file].facts.flow.decorations[index]
        callee = self._decorator_node(file, index)
        value = self.compile(file, decoration.value)
        out = self.decorated_result(file, index)
        if value is None:
            return
        key = ("implicit", file, decoration.scope)
        args = _Args([value])

        def react(objs: Iterable[Obj]) -> None:
            for obj in objs:
                if obj[0] == "X":  # an outside decorator: assumed to hand the function back
                    if obj[1]:
                        self.graph.implicit_calls.setdefault((file, decoration.scope), set()).add(obj[1])
                    self.edge(value, out)
                else:
                    self.call(key, obj, args, out)

        self.watch(callee, react)

    def _decorator_node(self, file: int, index: int) -> int:
        key = (-1 - file, index)  # decorator expressions get nodes of their own
        node = self.results.get(key)
        if node is None:
            node = self.results[key] = self.node()
            decorator = self.files[file].facts.flow.decorations[index].decorator
            self.edge(self.compile(file, decorator), node)
        return node

    def record(self, site: Any, target: Target, kind: str) -> None:
        if site[0] == "implicit":
            self.graph.implicit_calls.setdefault((site[1], site[2]), set()).add(target)
        else:
            self.graph.callees.setdefault(site, {}).setdefault(target, kind)

    def call(self, site: Any, obj: Obj, args: _Args, out: int) -> None:
        if (site, obj) in self.called:
            return
        self.called.add((site, obj))
        kind = obj[0]
        if kind == "F":
            self.record(site, FunctionKey(obj[1], obj[2]), "call")
            self.bind(obj, args, out)
        elif kind == "B":
            function, receiver = obj[1], obj[2]
            self.record(site, FunctionKey(function[1], function[2]), "call")
            self.bind(function, _Args([self.constant(receiver), *args.positional], args.star, args.keywords, args.double_star), out)
        elif kind == "C":
            instance = ("I", obj[1], obj[2])
            self.add(out, [instance])
            init = self.node()
            self.member(obj, "__init__", instance, init, skip_to=None)
            self.watch(init, lambda objs: [self.construct(site, o, args) for o in objs])
        elif kind == "I":
            method = self.node()
            for name in apis.INSTANCE_CALL_METHODS:
                if self.defines(obj, name):
                    self.member(("C", obj[1], obj[2]), name, obj, method, skip_to=None)
                    break
            for name in self.dispatched(obj):
                if self.defines(obj, name):
                    self.member(("C", obj[1], obj[2]), name, obj, method, skip_to=None)
            self.watch(method, lambda objs: [self.call(site, o, args, out) for o in objs if o[0] in ("B", "F")])
        elif kind == "X" and obj[1]:
            self.record(site, obj[1], "call")
            self.external_call(site, obj[1], args, out)
        elif kind == "P":
            self.call_partial(site, obj, args, out)

    def dispatched(self, instance: Obj) -> list[str]:
        """The dispatch methods named for a class of the instance's MRO (project or outside)."""
        if not self.dispatch:
            return []
        names = [
            f"{self.files[k[1]].module}.{k[2]}" if k[0] == "C" else k[1]
            for k in self.mro(("C", instance[1], instance[2]))
        ]
        return list(dict.fromkeys(
            method for pattern, methods in self.dispatch if any(pattern.match(n) for n in names) for method in methods
        ))

    def defines(self, instance: Obj, name: str) -> bool:
        return any(k[0] == "C" and f"{k[2]}.{name}" in self.declared[k[1]] for k in self.mro(("C", instance[1], instance[2])))

    def construct(self, site: Any, init: Obj, args: _Args) -> None:
        if init[0] == "B":
            function = init[1]
            self.record(site, FunctionKey(function[1], function[2]), "init")
            positional = [self.constant(init[2]), *args.positional]
            self.bind(function, _Args(positional, args.star, args.keywords, args.double_star), self.node())
        elif init[0] == "X" and init[1]:
            self.record(site, init[1], "init")

    def external_call(self, site: Any, name: str, args: _Args, out: int) -> None:
        if name in apis.PASS_THROUGH_CALLS:
            for node in [*args.positional, *args.star]:
                self.edge(node, out)
            if name == "builtins.dict":
                for _, node in args.keywords:
                    if node is not None:
                        self.edge(node, out)
        elif name in apis.CALLS_ITS_ARGUMENTS:
            for node in args.positional:
                if node is not None:
                    others = _Args(star=[n for n in args.positional if n is not None and n != node])
                    self.watch(node, lambda objs, others=others: [self.call(site, o, others, out) for o in objs if o[0] != "X"])
        elif name in apis.PARTIAL_FUNCTIONS and isinstance(site[0], int):
            self.add(out, [("P", site[0], site[1])])
        elif name.rsplit(".", 1)[-1][:1].isupper() and name.count(".") < _MAX_DEPTH:
            self.add(out, [("X", name)])  # an instance of an outside class: named by its class
        else:  # what an outside function returns: nothing to follow (chains of them end here)
            self.add(out, [EXTERNAL_VALUE])

    def call_partial(self, site: Any, partial: Obj, args: _Args, out: int) -> None:
        bound = self.site_args.get((partial[1], partial[2]))
        if bound is None or not bound.positional or bound.positional[0] is None:
            return
        combined = _Args(
            [*bound.positional[1:], *args.positional],
            [*bound.star, *args.star],
            [*bound.keywords, *args.keywords],
            [*bound.double_star, *args.double_star],
        )
        self.watch(bound.positional[0], lambda objs: [self.call(site, o, combined, out) for o in objs])

    def bind(self, function: Obj, args: _Args, out: int) -> None:
        """Arguments → parameters, returns → the call."""
        file, qualname = function[1], function[2]
        definition = self.files[file].facts.flow.defs.get(qualname)
        if definition is None or definition.kind != "function":
            return
        self.edge(self.variable(file, f"{qualname}.<return>"), out)
        params = definition.params
        positional = [name for name, kind in params if kind in ("o", "p")]
        varargs = next((name for name, kind in params if kind == "*"), None)
        varkw = next((name for name, kind in params if kind == "**"), None)
        for index, node in enumerate(args.positional):
            name = positional[index] if index < len(positional) else varargs
            if node is not None and name is not None:
                self.edge(node, self.variable(file, f"{qualname}.{name}"))
        rest = positional[len(args.positional) :] + ([varargs] if varargs else [])
        for node in args.star:
            for name in rest:
                self.edge(node, self.variable(file, f"{qualname}.{name}"))
        by_keyword = {name for name, kind in params if kind in ("p", "k")}
        for name, node in args.keywords:
            target = name if name in by_keyword else varkw
            if node is not None and target is not None:
                self.edge(node, self.variable(file, f"{qualname}.{target}"))
        unfilled = [name for name, kind in params if kind == "k" or (kind == "p" and name in rest)]
        for node in args.double_star:
            for name in [*unfilled, *([varkw] if varkw else [])]:
                self.edge(node, self.variable(file, f"{qualname}.{name}"))

    # ---- entry points -----------------------------------------------------------------------
    def entry(self, file: int, index: int, targets: list[Expr]) -> None:
        """An entry point calls what it is handed (dynamo and capture run it): a function, a
        bound method, a module instance, or a decorated class's instances."""
        for target in targets:
            node = None
            if target[0] == "arg":
                args = self.site_args.get((file, target[1]))
                node = args.positional[0] if args and args.positional else None
            elif target[0] == "receiver":
                node = self.receivers.get((file, target[1]))
            elif target[0] == "def":
                node = self.compile(file, ["d", target[1]])
            if node is None:
                continue
            site, out = ("entry", file, index), self.node()
            self.watch(node, lambda objs, site=site, out=out: [self.call(site, self.called_as_entry(o), _Args(), out) for o in objs])

    def called_as_entry(self, obj: Obj) -> Obj:
        """A class stands for its instances, a method decorated in its class body for the method
        bound to an instance of that class."""
        if obj[0] == "F" and self.files[obj[1]].facts.flow.defs[obj[2]].method == "instance":
            return ("B", obj, ("I", obj[1], obj[2].rsplit(".", 1)[0]))
        return _instance_of(obj)


def _instance_of(obj: Obj) -> Obj:
    return ("I", obj[1], obj[2]) if obj[0] == "C" else obj
