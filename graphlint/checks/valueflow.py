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

import dataclasses
from collections.abc import Callable, Iterable

from graphlint.checks import apis
from graphlint.checks.call_semantics import CallSemantics
from graphlint.checks.class_hierarchy import ClassHierarchy, absolute_name
from graphlint.checks.collector import collector_paused
from graphlint.checks.compile_wrappers import WRAPPER, escaped_wrappers, wrapper_rows
from graphlint.checks.facts import CallSite, Expr
from graphlint.checks.instance_methods import any_instance
from graphlint.checks.presets import glob_pattern
from graphlint.checks.site_edges import absorb_outside, calls_by_site, entries_per_copy
from graphlint.checks.value_graph import (
    MAX_DEPTH,
    EXTERNAL_VALUE,
    HOST_TENSOR,
    CallGraph,
    FunctionKey,
    LinkedModule,
    Obj,
    OUTSIDE_ANY,
    instance_calls,
    instance_of,
)


def solve(
    files: list[LinkedModule],
    dispatch: dict[str, tuple[str, ...]] | None = None,
    not_dispatched: dict[str, tuple[str, ...]] | None = None,
    preview: bool = False,
) -> CallGraph:
    """``dispatch``: class (dotted name, globs) → methods an instance call runs besides ``forward``;
    ``not_dispatched``: class → methods never called on its instances (``forward_cpu``);
    ``preview``: also the preview contexts (per-call-site copies, returned ``*args`` elements)."""
    solver = solve_kept(files, dispatch or {}, not_dispatched or {}, preview)
    # The watchers close over the solver: a cycle only the collector would free, after a pass
    # over the whole heap (seconds, in a session that solves again and again).
    solver.release()
    assert solver.answer is not None
    return solver.answer


def solve_kept(
    files: list[LinkedModule],
    dispatch: dict[str, tuple[str, ...]],
    not_dispatched: dict[str, tuple[str, ...]],
    preview: bool = False,
) -> "Solver":
    """``solve``, keeping the solver (its nodes, edges and watchers) for ``incremental_solve.py``
    to extend; its graph is ``solver.answer``. The caller drops it with ``Solver.release``.
    Where an instance of a class made at several sites had a method stored on it, solved again
    telling apart the instances of those classes (``instance_methods.py``)."""
    solver = Solver(files, dispatch, not_dispatched, preview)
    solver.answer = solver.solved(solver.run)
    told_apart = solver.told_apart()
    if told_apart:
        solver.release()
        solver = Solver(files, dispatch, not_dispatched, preview, told_apart)
        solver.answer = solver.solved(solver.run)
    return solver


class Solver(CallSemantics):
    def __init__(
        self,
        files: list[LinkedModule],
        dispatch: dict[str, tuple[str, ...]],
        not_dispatched: dict[str, tuple[str, ...]],
        preview: bool = False,
        tagged: frozenset[tuple[int, str]] = frozenset(),
    ) -> None:
        super().__init__()
        self.files = files
        self.preview = preview
        self.dispatch = [(glob_pattern(name), methods) for name, methods in dispatch.items()]
        self.not_dispatched = [(glob_pattern(name), methods) for name, methods in not_dispatched.items()]
        self.classes = ClassHierarchy.of(files)
        self.by_module = self.classes.by_module
        self.packages = self.classes.packages  # every module and package name, namespace packages too
        self.declared = [set(by_var) | set(linked.facts.flow.defs) for by_var, linked in zip(self.classes.assigned, files)]
        self.attributes: dict[tuple[Obj, str], int] = {}
        self.loads: dict[tuple[int, str], int] = {}
        self.receivers = {}  # model.compile(): the node of ``model``
        self.site_args = {}
        self.called = set()
        self.rest_nodes = {}
        self.rest_watchers = {}
        self.callee_nodes = {}
        self.pass_sites = {}
        self.passes_found = {}
        self.forwarded_guards = {}
        self.forward_queue = []
        self.forwarding = False
        self.guard_classes = {}
        self.site_edges = {}
        self.outside_any_sites = set()  # sites that run OUTSIDE_ANY (``absorb_outside``)
        self.decorations_made = []
        self.bound_functions = set()
        self.defaulted = set()
        self.outside_arguments = []
        self.constructed = set()
        self.tagged = tagged
        self.patched = set()
        self.instance_methods = {}
        # a rebound argument's node (``before_rebinding``) → the node it reads and its watcher
        # there: what ``call_retraction.py`` takes back when the call changes
        self.rebound: dict[int, tuple[int, Callable[[Iterable[Obj]], None]]] = {}
        # per file: variable → the node each of its assignments in the file assigns, in the
        # file's order (None: a value that compiles to nothing): what ``rederive.py`` takes back
        self.assign_sources: list[dict[str, list[int | None]]] = [{} for _ in files]
        self.graph = CallGraph({}, set(), {}, {})
        self.answer: CallGraph | None = None  # the last finished graph (a kept solver)

    # ---- the run ----------------------------------------------------------------------------
    def run(self) -> CallGraph:
        for file, linked in enumerate(self.files):
            flow = linked.facts.flow
            self.start(file, flow.assigns, enumerate(flow.calls))
        for file, linked in enumerate(self.files):
            for index, decoration in enumerate(linked.facts.flow.decorations):
                self.decoration(file, index)
            for index, entry in enumerate(linked.facts.entries):
                self.entry(file, index, entry.targets)
            for index in range(len(linked.facts.flow.implicit)):
                self.implicit_call(file, index)
        self.settle()
        return self.finish()

    def solved(self, work: Callable[[], CallGraph]) -> CallGraph:
        # The graph is millions of small sets and tuples and makes no cycles the cyclic collector
        # must find: its passes over the growing heap were a third of the solve on transformers'
        # models/ (2,544 files).
        with collector_paused():
            return work()

    def release(self) -> None:
        """Breaks the cycles through the watchers (they close over the solver)."""
        self.watchers.clear()
        self.rest_watchers.clear()
        self.rebound.clear()

    def start(self, file: int, assigns: Iterable[tuple[Expr, Expr]], calls: Iterable[tuple[int, CallSite | None]]) -> None:
        """A file's assignments and call sites as nodes and edges."""
        for target, value in assigns:
            self.assign(file, target, self.compile(file, value))
        for ordinal, site in calls:
            if site is not None:
                self.call_site(file, ordinal, site)

    def settle(self) -> None:
        """The fixed point, then the decisions taken only there, each propagated in turn."""
        self.propagate()
        if self.late is None:
            self.late = set()
        while self.undecided_decorations() and not self.stopped:
            self.propagate()
        while self.unseen_defaults() and not self.stopped:  # called where graphlint cannot see
            self.propagate()
        self.propagate()

    def finish(self) -> CallGraph:
        """What the solved graph answers, in tables of its own: the solver's are left as they
        are (a kept solver is extended and finished again, ``incremental_solve.py``)."""
        edges = dict(self.site_edges)
        for key in [key for key in edges if key[0] == "entry"]:  # entries_per_copy merges into these
            edges[key] = dict(edges[key])
        per_copy = entries_per_copy(edges)
        graph = self.graph
        graph.callees, graph.copies = calls_by_site(edges)
        graph.copies.update(per_copy)
        implicit = absorb_outside(graph.callees, graph.copies, graph.implicit_calls, self.outside_any_sites)
        graph.resolved = {
            key[:2] for key, node in self.callee_nodes.items() if self.values[node] and node not in self.saturated
        }
        # a call of methods' copies (``receiver_copies.py``) is on the host if it is in every copy
        receiver_nodes: dict[tuple[int, int], list[int]] = {}
        for key, node in self.receivers.items():
            receiver_nodes.setdefault(key[:2], []).append(node)
        graph.host_receivers = {
            key for key, nodes in receiver_nodes.items()
            if all(self.values[n] <= {HOST_TENSOR} and n not in self.saturated for n in nodes)
            and any(self.values[n] for n in nodes)
        }
        graph.instance_calls = instance_calls(self.callee_nodes, self.values, self.saturated)
        graph.stopped = self.steps if self.stopped else None
        graph.saturated = len(self.saturated)
        graph.collapsed = self.collapsed
        graph.entry_targets, graph.entry_outside = {}, {}
        for file, linked in enumerate(self.files):
            for index in range(len(linked.facts.entries)):
                targets = graph.callees.pop(("entry", file, index), {})  # type: ignore[call-overload]
                graph.entry_targets[file, index] = [
                    t for t, kind in targets.items() if isinstance(t, FunctionKey) and kind == "call"
                ]
                graph.entry_outside[file, index] = [t for t in targets if isinstance(t, str)]
        graph.wrapper_calls, graph.wrapper_only = wrapper_rows(self.callee_nodes, self.values, self.saturated)
        graph.escaped_wrappers = escaped_wrappers(self.outside_arguments, self.values)
        graph.unseen = self.called_unseen()
        # the implicit calls are the solver's own table (``record`` fills it): the answer keeps a copy
        return dataclasses.replace(graph, implicit_calls=implicit)

    def assign(self, file: int, target: Expr, value: int | None) -> None:
        if target[0] == "v":
            self.assign_sources[file].setdefault(target[1], []).append(value)
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
        if self.stored_method(obj, name, value):
            return
        if obj[0] in ("I", "C"):
            self.edge(value, self.variable(obj[1], f"{obj[2]}.{name}"))
            self.declared[obj[1]].add(f"{obj[2]}.{name}")
        elif obj[0] == "M":
            for file in self.by_module.get(obj[1], ()):
                self.edge(value, self.variable(file, name))
                self.declared[file].add(name)

    # ---- expressions ------------------------------------------------------------------------
    def compile(self, file: int, expr: Expr | None, depth: int = 0) -> int | None:
        if expr is None or depth > MAX_DEPTH * 8:
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
                return None if ("C", file, expr[1]) in self.classes.derived else self.constant(("I", file, expr[1]))
            # ``["d", qualname, copy]``: a function nested in a method's copy (``receiver_copies.py``)
            return self.constant(("C" if definition.kind == "class" else "F", file, expr[1], *expr[2:]))
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
            self.watch(named, lambda objs: self.add(out, [instance_of(o) for o in objs if o[0] == "C"]))
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
                elif self.files[file].facts.flow.star_imports and depth < MAX_DEPTH:
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
        elif kind == "H":
            self.add(node, [("H", name)] if not obj[1] and name in apis.DEVICE_PRESERVING_METHODS else [EXTERNAL_VALUE])
        elif kind == WRAPPER:  # ``OptimizedModule`` reads its attributes off the module it wraps
            handed = self.site_args.get(obj[1:])
            if handed is not None and handed.positional and handed.positional[0] is not None:
                self.edge(self.attribute_of(handed.positional[0], name), node)
        elif obj == OUTSIDE_ANY:
            self.add(node, [OUTSIDE_ANY])
        elif kind == "X" and obj[1] and obj[1].count(".") < MAX_DEPTH:
            self.add(node, [("X", f"{obj[1]}.{name}")])
        elif kind == "X":  # past the depth too: an attribute of an outside value is outside
            self.add(node, [EXTERNAL_VALUE])
        return node

    def member(self, cls: Obj, name: str, receiver: Obj, out: int, skip_to: Obj | None) -> None:
        """``receiver.name`` looked up on ``cls``'s MRO (after ``skip_to`` for ``super()``)."""
        order = self.classes.mro(cls)
        if skip_to is None and receiver[0] == "I":
            self.stored_methods(receiver, name, out)
        if skip_to is not None:
            order = order[order.index(skip_to) + 1 :] if skip_to in order else []
        for klass in order:
            if klass[0] == "C" and f"{klass[2]}.{name}" in self.declared[klass[1]]:
                source = self.variable(klass[1], f"{klass[2]}.{name}")
                self.watch(source, lambda objs: self.bind_member(objs, receiver, out))
                written = self.receiver_field(klass, name, receiver)  # by the copies for the receiver's class
                if written is not None:
                    self.watch(written, lambda objs: self.bind_member(objs, receiver, out))
                return
        for klass in order:
            if klass[0] == "X" and klass[1] != "builtins.object":
                self.add(out, [("X", f"{klass[1]}.{name}")])
                return

    def bind_member(self, objs: Iterable[Obj], receiver: Obj, out: int) -> None:
        """Functions read through an instance become bound methods; a property gives what its
        getter returns. An instance told apart by the call that made it is bound as the class's
        one instance: what tells it apart is read only through it (``instance_methods.py``), and
        one bound method per such instance filled the sets of a method's bound methods past
        their bound (sglang's ``dispatch_forward``: 255 of them)."""
        plain = []
        for obj in objs:
            method = self.files[obj[1]].facts.flow.defs[obj[2]].method if obj[0] == "F" else None
            if method == "instance" and receiver[0] == "I":
                plain.append(("B", obj, any_instance(receiver)))
            elif method == "class":
                plain.append(("B", obj, ("C", receiver[1], receiver[2])))
            elif method == "property" and receiver[0] == "I":
                self.edge(self.variable(obj[1], f"{obj[2]}.<return>"), out)
            else:
                plain.append(obj)
        self.add(out, plain)
