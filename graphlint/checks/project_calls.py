"""Changed arguments of calls to project code, taken back where the edit moves no value.

A call's watcher binds its arguments to the parameters of each function, class or instance its
callee holds (``CallSemantics.call``): edges, which other calls may make too, into nodes whose
values the callee's body reacts to. Equal values are not enough to swap one argument for
another: ``x = f(y)`` changed to ``x = f(x)`` where ``f`` returns its parameter leaves the cycle
``x → f.p → x`` without support, and a full solve gives both nothing. What is taken back here,
exactly:

- What the call does with its arguments is found by running its reaction again, for every
  object its callee holds, in a sandbox (``Sandbox``): once with the arguments the solve holds,
  once with the edit's. Nothing of the solver changes (new nodes are dropped, the solver's
  ``called``, ``record`` and ``steps`` are set aside, a pass-through site is taken out again);
  the sandbox notes the edges made from or into existing nodes (with how many times), the
  existing nodes watched and given values, and what its own nodes hold. The two runs must
  differ only in edges between existing nodes; where they differ otherwise (an argument an
  ``isinstance`` guard or a per-class copy reads, a table grown: a pass found or a copy made)
  the edit is refused. A callee that also hands its arguments to code outside the project
  (``list(x)``: it passes them through) qualifies only where they hold, before and after, none
  of the project's functions, classes or instances (``call_retraction.hands_out_nothing``:
  what outside calls read of them then decides nothing).
- Per target ``t`` of the edges that differ: the values the sources it gains hold are among
  ``t``'s, and those of each source it loses are among what its *supports* hold together (in
  the lattice's order: ``OUTSIDE_ANY`` covers outside names, and a join past ``OUTSIDE_CAP``
  names collapses): the sources it gains and, where those are not enough, the arguments of the
  other calls that bind the same function (``supports``: the re-derivation step of a
  delete-and-rederive, a lost value kept where an edge the edit leaves still carries it); none
  of these nodes gained values after the first fixed point (``ValueGraph.late``). And none of
  the sources, supports, the callee's node or the nodes the reaction reads depends on a target
  (``dependents``: the nodes the targets' values flow to, along edges and through what their
  watchers' reactions make, run in the sandbox too).
- Then the solve's values are a fixed point of the edited project's graph (each target is given
  no value it lacks), and the least: the nodes that do not depend on the targets (the supports
  among them) are derived as before, without the edges the edit takes (those end at targets),
  so each target still receives every value a lost edge carried. Round by round of the
  decisions at the fixed point (none of these nodes is late) the same holds, so the decisions
  are the same. No value changes, nor the answer: only the
  edges, which are swapped with their makers counted (``ValueGraph.repeated_edges``: an edge
  another reaction made stays), and what the call's site keeps (its ``CallArgs``, in place, as
  ``call_retraction.py`` replaces them; its pass-through entries).

Watchers that captured a copy of the old arguments (a method's receiver prepended, a partial's
arguments) are left: they react only to values an existing node gains, which neither an
extension (``_guarded_add``) nor a take-back gives.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from graphlint.checks.call_retraction import hands_out_nothing
from graphlint.checks.retraction import APPENDED, LISTS_BY_KEY, NODES, SETS, mass
from graphlint.checks import value_graph
from graphlint.checks.value_graph import OUTSIDE_ANY, CallArgs, FunctionKey, Obj, collapsible
from graphlint.checks.valueflow import Solver

# How many nodes the dependents of a target may number before the edit is refused (a layer's
# hidden states reach the model's every later layer: proving past this costs more than a solve)
DEPENDENTS_CAP = 20_000
# The solver's tables a sandboxed reaction may not grow (the sandbox sets ``called`` aside)
_WATCHED_TABLES = tuple(name for name in (*APPENDED, *SETS, "decorations_made") if name != "called")


class Sandbox:
    """What a reaction of the solver does, noted without changing the solver (``running``)."""

    def __init__(self, solver: Solver) -> None:
        self.solver = solver
        self.existing = len(solver.values)
        self.edges: Counter[tuple[int, int]] = Counter()  # made from or into an existing node
        self.watched: Counter[int] = Counter()  # existing nodes watched
        self.given: Counter[tuple[int, frozenset[Obj]]] = Counter()  # values delivered to existing nodes
        self.records: Counter[tuple[Any, ...]] = Counter()  # what ``record`` would note
        self.passes: list[tuple[tuple[int, str], Any]] = []  # the pass-through entries made
        self.made: list[frozenset[Obj]] = []  # what the sandbox's own nodes held
        self.grown: list[str] = []  # the solver's tables the reaction grew (then it is unusable)
        self.handed = 0  # how many times it handed arguments to code outside (``outside_arguments``)

    @contextmanager
    def running(self, tables: bool = True) -> Iterator[None]:
        """The solver with this sandbox's ``add``, ``edge``, ``watch``...; after, its own nodes
        dropped and (``tables``) the tables it grew noted (``sizes``)."""
        solver = self.solver
        sizes = self.sizes() if tables else {}
        called, steps, handed = solver.called, solver.steps, len(solver.outside_arguments)
        solver.called = set()
        solver.add, solver.edge, solver.watch, solver.record = self.add, self.edge, self.watch, self.record  # type: ignore[method-assign]
        solver.bind_passes = self.bind_passes  # type: ignore[method-assign]
        try:
            yield
        finally:
            del solver.add, solver.edge, solver.watch, solver.record, solver.bind_passes
            solver.called, solver.steps = called, steps
            self.handed = len(solver.outside_arguments) - handed
            del solver.outside_arguments[handed:]
            self.made = [frozenset(values) for values in solver.values[self.existing:]]
            for name in NODES:
                del getattr(solver, name)[self.existing:]
            self.grown = [name for name, size in self.sizes().items() if size != sizes[name]] if tables else []

    def sizes(self) -> dict[str, int]:
        """How much the tables a reaction may not grow hold (the dicts of lists by their lists)."""
        solver = self.solver
        sizes = {name: len(getattr(solver, name)) for name in _WATCHED_TABLES if getattr(solver, name) is not None}
        sizes.update((name, mass(getattr(solver, name))) for name in (*LISTS_BY_KEY, "passes_found"))
        return sizes

    def add(self, node: int, objects: Iterable[Obj]) -> None:
        solver = self.solver
        if node < self.existing:
            self.given[node, frozenset(objects)] += 1
            return
        new = set(objects) - solver.values[node]
        if new:
            solver.values[node] |= new
            for successor in list(solver.successors[node]):
                if successor >= self.existing:
                    self.add(successor, new)
            for react in list(solver.watchers[node]):
                react(new)

    def edge(self, source: int | None, target: int) -> None:
        if source is None or source == target:
            return
        solver = self.solver
        if source < self.existing or target < self.existing:
            self.edges[source, target] += 1
        if source >= self.existing:
            solver.successors[source].add(target)
        if target >= self.existing and solver.values[source]:
            self.add(target, solver.values[source])

    def watch(self, node: int, react: Callable[[Iterable[Obj]], None]) -> None:
        solver = self.solver
        if node < self.existing:
            self.watched[node] += 1
        else:
            solver.watchers[node].append(react)
        if solver.values[node]:
            react(list(solver.values[node]))

    def record(self, site: Any, target: Any, kind: str, copy: str = "") -> None:
        self.records[site, target, kind, copy] += 1

    def bind_passes(self, file: int, qualname: str, *rest: Any) -> None:
        """``PassThrough.bind_passes``, its site's entry taken out again (kept in ``passes``)."""
        Solver.bind_passes(self.solver, file, qualname, *rest)
        self.passes.append(((file, qualname), self.solver.pass_sites[file, qualname].pop()))

    def same_but_edges(self, other: "Sandbox") -> bool:
        """Whether ``other``'s run did what this one did but, maybe, the edges between existing
        nodes (the sandbox's own nodes numbered alike, holding the same)."""
        own = lambda edges: Counter({pair: n for pair, n in edges.items() if max(pair) >= self.existing})  # noqa: E731
        return (
            (self.watched, self.given, self.records, self.made, self.handed)
            == (other.watched, other.given, other.records, other.made, other.handed)
            and own(self.edges) == own(other.edges) and len(self.passes) == len(other.passes)
        )


def replayed(solver: Solver, key: tuple[Any, ...], args: CallArgs, out: int) -> Sandbox:
    """The reaction of call site ``key`` to what its callee holds, handed ``args``, in a sandbox."""
    box = Sandbox(solver)
    with box.running():
        for obj in list(solver.values[solver.callee_nodes[key]]):
            solver.call(key, obj, args, out)
    return box


def dependents(solver: Solver, targets: Iterable[int], read: set[int]) -> set[int] | str:
    """The nodes whose values or edges may depend on ``targets``' values (the targets too): along
    edges, and into what their watchers' reactions make (run in a sandbox); or why not proven
    (one of ``read`` depends on them, too many nodes, a reaction that grows the solver's tables)."""
    sizes = Sandbox(solver).sizes()  # (compared once at the end: a table grown stays grown)
    found = _reached(solver, targets, read)
    grown = [name for name, size in Sandbox(solver).sizes().items() if size != sizes[name]]
    if grown:
        return f"a reaction to what the changed call binds grows the solver's tables ({', '.join(grown)})"
    return found


def _reached(solver: Solver, targets: Iterable[int], read: set[int]) -> set[int] | str:
    found = set(targets)
    stack = list(found)
    while stack:
        node = stack.pop()
        if node in read:
            return "a node the changed call reads depends on what it binds"
        reached = set(solver.successors[node])
        if solver.watchers[node]:
            box = Sandbox(solver)
            with box.running(tables=False):
                for react in list(solver.watchers[node]):
                    react(list(solver.values[node]))
            reached.update(target for _, target in box.edges if target < box.existing)
            reached.update(target for target, _ in box.given)
        for successor in reached - found:
            found.add(successor)
            stack.append(successor)
        if len(found) > DEPENDENTS_CAP:
            return "what the changed call binds reaches too many nodes to prove"
    return found


Swap = tuple[tuple[Any, ...], CallArgs, CallArgs, int]  # a call site's key, its arguments before and after, its result


def swapped(solver: Solver, calls: list[Swap]) -> Callable[[], None] | str:
    """How to give each call site of ``calls`` (its callee the project's) its new arguments in
    place of its old without changing a value (module docstring), or why that is not exact.
    The calls together: a target's edges may come from several. Nothing changes until the
    function given back is run."""
    delta: Counter[tuple[int, int]] = Counter()
    read: set[int] = set()
    passes: list[tuple[tuple[Any, ...], list[tuple[tuple[int, str], Any]]]] = []
    boxes: list[Sandbox] = []
    for key, old, new, out in calls:
        before, after = replayed(solver, key, old, out), replayed(solver, key, new, out)
        boxes += before, after
        grown = before.grown + after.grown
        if grown:
            return f"the changed call's reaction grows the solver's tables ({', '.join(sorted(set(grown)))})"
        if not before.same_but_edges(after):
            return "the changed call does more with its arguments than bind them (a guard, a copy)"
        if after.handed and not all(hands_out_nothing(solver.values[n]) for n in (*old.nodes(), *new.nodes())):
            return "the changed call hands a project function, class or instance to code outside the project"
        delta.update(after.edges)
        delta.subtract(before.edges)
        # what the reaction reads: the callee, the nodes it watches, those it reads into its own nodes
        read.update((solver.callee_nodes[key], *after.watched))
        read.update(source for source, target in after.edges if source < after.existing <= target)
        passes.append((key, after.passes))
    delta = Counter({pair: n for pair, n in delta.items() if n})
    why = _moves_no_value(solver, delta, {})
    held: Supports | None = None
    if why == _TAKES and delta:  # the sources gained are not enough: other calls may be
        bound = {(target, copy) for box in boxes for _, target, _, copy in box.records if isinstance(target, FunctionKey)}
        held = supports(solver, bound, delta)
        why = _moves_no_value(solver, delta, held.sources())
    if why is None and delta:
        found = dependents(solver, {target for _, target in delta}, read | {source for source, _ in delta})
        if isinstance(found, str):
            why = found
        elif held is not None:  # the supports whose values and edges do not depend on a target
            why = _moves_no_value(solver, delta, held.sources(found))
    if why is not None:
        return why

    def swap() -> None:
        for pair, n in delta.items():
            source, target = pair
            makers = (1 + solver.repeated_edges.pop(pair, 0) if target in solver.successors[source] else 0) + n
            if makers <= 0:
                solver.successors[source].discard(target)
            else:
                solver.successors[source].add(target)
                if makers > 1:
                    solver.repeated_edges[pair] = makers - 1
        for (key, _, new, _), (_, made) in zip(calls, passes):
            kept = solver.site_args[key]
            kept.positional[:], kept.keywords[:] = new.positional, new.keywords
            for function, _ in made:  # the site's pass-through entries: its new arguments'
                solver.pass_sites[function][:] = [entry for entry in solver.pass_sites[function] if entry[3][0] != key]
            for function, entry in made:
                solver.pass_sites[function].append(entry)

    return swap


_TAKES = "the changed call takes values from a parameter"


def _moves_no_value(solver: Solver, delta: Counter[tuple[int, int]], support: dict[int, set[int]]) -> str | None:
    """Why the edges ``delta`` takes (< 0) and gives (> 0) may change a value at their targets
    (None: each target holds what it gains and loses nothing that its sources gained and its
    ``support`` do not carry, and none of these nodes is late)."""
    lost: dict[int, set[int]] = {}
    gained: dict[int, set[int]] = {}
    for (source, target), n in delta.items():
        (gained if n > 0 else lost).setdefault(target, set()).add(source)
    late = solver.late or set()
    for target in {*lost, *gained}:
        sources_lost, sources_gained = lost.get(target, set()), gained.get(target, set())
        others = support.get(target, set()) - sources_lost
        if {target, *sources_lost, *sources_gained, *others} & late:
            return "a value the changed call binds was derived after the first fixed point"
        kept = lambda objs: set(solver.typed_values(objs) if target in solver.typed else objs)  # noqa: E731
        given = kept(set().union(*(solver.values[s] for s in sources_gained)))
        if not below(given, solver.values[target]):
            return "the changed call gives a parameter values it lacks"
        carried = joined_values(given, (kept(solver.values[s]) for s in others)) if others else given
        if not all(below(kept(solver.values[s]), carried) for s in sources_lost):
            return _TAKES
    return None


# How many other calls of the callee ``supports`` replays at most (each a sandboxed reaction)
SUPPORT_SITES = 64


@dataclass
class Supports:
    """Per target, sources of edges into it that the edit leaves, made by other calls, each
    with the nodes those calls' reactions read to make the edge."""

    made: dict[int, dict[int, set[int]]] = field(default_factory=dict)

    def sources(self, dependent: set[int] | None = None) -> dict[int, set[int]]:
        """Per target, the sources; with ``dependent`` (the nodes that may depend on the
        targets), only those that are not and whose edge reads none of them."""
        return {
            target: {s for s, read in row.items() if dependent is None or not ({s} | read) & dependent}
            for target, row in self.made.items()
        }


def supports(solver: Solver, bound: set[tuple[Any, str]], delta: Counter[tuple[int, int]]) -> Supports:
    """The supports of ``delta``'s targets: the arguments of calls that bind a function of
    ``bound`` (a function key and its copy, as ``CallSemantics.record`` notes them) with an
    edge into a target that the edit leaves (its makers counted: ``ValueGraph.repeated_edges``)
    and that the call's reaction, replayed in a sandbox, makes; with what that reaction reads
    (its callee's node, its arguments, the nodes it watches, those it reads into its own
    nodes): where none of
    it depends on a target, the edge is made in the edited project too, and carries what its
    source holds (module docstring). Some support, not all: at most ``SUPPORT_SITES`` calls."""
    targets = {target for _, target in delta}
    found = Supports()
    replays = 0
    for key, row in solver.site_edges.items():
        if not isinstance(key[0], int) or not any(entry in row for entry in bound):
            continue
        site = key[:2] if key[2] == "" else key
        args, out = solver.site_args.get(site), solver.results.get((key[0], key[1] if key[2] == "" else (key[1], key[2])))
        if args is None or out is None or site not in solver.callee_nodes:
            continue
        edges = {
            (source, target) for source in args.nodes() for target in targets & solver.successors[source]
            if 1 + solver.repeated_edges.get((source, target), 0) + delta.get((source, target), 0) > 0
        }
        if not edges:
            continue
        if replays == SUPPORT_SITES:
            break
        replays += 1
        box = replayed(solver, site, args, out)
        if box.grown:
            continue
        read = {solver.callee_nodes[site], *args.nodes(), *box.watched, *(s for s, t in box.edges if s < box.existing <= t)}
        for source, target in edges:
            if box.edges[source, target]:
                found.made.setdefault(target, {}).setdefault(source, set()).update(read)
    return found


def joined_values(held: set[Obj], incoming: Iterable[set[Obj]]) -> set[Obj]:
    """``held`` and ``incoming`` as one set, as ``ValueGraph.add`` joins them: the outside names
    past OUTSIDE_CAP collapsed."""
    joined = set(held).union(*incoming)
    if OUTSIDE_ANY in joined or sum(1 for o in joined if collapsible(o)) > value_graph.OUTSIDE_CAP:
        joined = {o for o in joined if not collapsible(o)} | {OUTSIDE_ANY}
    return joined


def below(lower: Iterable[Obj], upper: set[Obj]) -> bool:
    """Whether ``upper`` holds ``lower`` in the order of the values' lattice (``OUTSIDE_ANY``
    stands above every outside name it absorbs, ``value_graph.py``)."""
    return all(obj in upper or (collapsible(obj) and OUTSIDE_ANY in upper) for obj in lower)
