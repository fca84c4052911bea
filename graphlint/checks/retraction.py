"""Taking back the facts the last extension of a kept solve added (``incremental_solve.py``).

An edit that changes or removes a line solves in full unless the facts it removes are the ones
the kept solve's last extension added: typing on a line changes again and again the line the
last edit added. An extension gives no existing node a value (``_guarded_add``); what it changes
of the solver is new nodes (numbered from ``existing`` on), new entries in the solver's tables,
watchers and edges it hung on existing nodes, the edited file's facts and the tables computed
from them. A ``Journal`` taken before the extension notes how much of each there was, and
``retract`` takes back exactly what came after: the solver is then the one before the extension
(the same nodes, values, edges, watchers and tables), whose answer was a full solve's, and the
edit is tried again as an addition to it. What the journal cannot take back exactly (an edge
recorded at an old site, a table it does not know, a size that does not come out as noted)
makes ``retract`` say so, and the caller solves in full.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cached_property
from itertools import islice
from typing import Any

from graphlint.checks.file_tables import per_file
from graphlint.checks.value_graph import CallGraph, LinkedModule, ValueGraph
from graphlint.checks.valueflow import Solver

# The solver's tables by how the journal takes an extension back (every other attribute makes
# ``Journal`` refuse, so that a table added later is never left extended):
# dicts whose new entries come last and whose old entries an extension never changes
APPENDED = (
    "attributes", "loads", "receivers", "site_args", "callee_nodes", "site_edges", "guard_classes",
    "variables", "constants", "results", "decorated", "iterated", "routed", "copies", "copy_counts",
    "passes_found", "rest_nodes", "rebound", "instance_methods",
)
LISTS_BY_KEY = ("pass_sites", "forwarded_guards", "rest_watchers")  # dicts of lists appended to
SETS = ("called", "outside_any_sites", "routed_bound", "typed", "late", "constructed", "bound_functions",
         "defaulted", "refused", "saturated", "patched")  # what was added names a new node or a new site
LISTS = ("outside_arguments", "decorations_made", "forward_queue", "pending")
RESTORED = ("steps", "collapsed", "stopped", "forwarding", "answer")
NODES = ("values", "successors", "watchers")
COUNTS = ("repeated_edges",)  # counts that grow in place: taken back by what the journal noted
FIXED = ("files", "classes", "declared", "scoped_by_file", "assign_sources", "by_module", "packages", "dispatch",
          "not_dispatched", "preview", "graph", "tagged")  # taken back one by one in ``retract``


class Journal:
    """How much the solver held before an extension of ``file`` from call ``first_call`` on."""

    def __init__(
        self, solver: Solver, file: int, first_call: int, graph: CallGraph, work: int, own: LinkedModule,
        numbered: tuple[LinkedModule, list[int]] | None,
    ) -> None:
        self.file, self.first_call = file, first_call
        # the ``LiveSolve`` before the extension: its answer, work bound, the file as the project
        # gave it, and the solver's numbering of its calls
        self.graph, self.work, self.own, self.numbered = graph, work, own, numbered
        self.existing = len(solver.values)
        tables = self.computed(solver)
        known = {*APPENDED, *LISTS_BY_KEY, *SETS, *LISTS, *RESTORED, *NODES, *FIXED, *COUNTS}
        self.unknown = sorted(name for name in vars(solver) if name not in known and name not in self.all_tables(solver))
        self.sizes = {name: len(getattr(solver, name)) for name in (*APPENDED, *SETS, *LISTS) if getattr(solver, name) is not None}
        self.by_key = {name: {key: len(items) for key, items in getattr(solver, name).items()} for name in LISTS_BY_KEY}
        self.scalars = {name: getattr(solver, name) for name in RESTORED}
        self.facts = solver.files[file]
        self.assigned = solver.classes.assigned[file]
        self.declared = set(solver.declared[file])
        self.sources = {name: list(nodes) for name, nodes in solver.assign_sources[file].items()}
        self.scoped = solver.scoped_by_file.get(file)
        # the tables computed from the files: a per-file table's row of ``file``, a whole table
        self.tables = {
            name: solver.__dict__[name][file] if isinstance(getattr(type(solver), name), per_file) else solver.__dict__[name]
            for name in tables
        }
        self.watched: dict[int, int] = {}  # existing node → its watchers before the extension
        self.edges: list[tuple[int, int]] = []  # edges added from existing nodes
        self.repeated: list[tuple[int, int]] = []  # edges made again (``ValueGraph.repeated_edges``)
        self.calls: list[tuple[Any, Any]] = []  # what ``Solver.call`` added to ``called``
        self.sound = True  # False: the extension did what this cannot take back

    @staticmethod
    def all_tables(solver: Solver) -> set[str]:
        """The solver's tables computed from the files (``cached_property``, ``per_file``)."""
        return {name for klass in type(solver).__mro__ for name, value in vars(klass).items() if isinstance(value, cached_property)}

    def computed(self, solver: Solver) -> list[str]:
        """Those of them computed so far."""
        return [name for name in self.all_tables(solver) if name in solver.__dict__]

    def watching(self, solver: Solver, node: int) -> None:
        if node < self.existing and node not in self.watched:
            self.watched[node] = len(solver.watchers[node])

    def edge(self, solver: Solver, source: int | None, target: int) -> None:
        if source is None or source == target:
            return
        if target in solver.successors[source]:
            self.repeated.append((source, target))
        elif source < self.existing:
            self.edges.append((source, target))

    def call(self, solver: Solver, site: Any, obj: Any) -> None:
        if (site, obj) not in solver.called:
            self.calls.append((site, obj))

    def record(self, solver: Solver, watched: list[int]) -> None:
        """Has the solver note here what the extension hangs on existing nodes: its ``watch``,
        ``edge`` and ``call`` do their work after this journal notes it (``watched`` gets every
        node watched)."""
        call = type(solver).call

        def watch(node: int, react: Callable[[Iterable[Any]], None]) -> None:
            watched.append(node)
            self.watching(solver, node)
            ValueGraph.watch(solver, node, react)

        def edge(source: int | None, target: int) -> None:
            self.edge(solver, source, target)
            ValueGraph.edge(solver, source, target)

        def journaled_call(site: Any, obj: Any, *rest: Any) -> None:
            self.call(solver, site, obj)
            call(solver, site, obj, *rest)

        solver.watch = watch  # type: ignore[method-assign]
        solver.edge = edge  # type: ignore[method-assign]
        solver.call = journaled_call  # type: ignore[method-assign]

    def new(self, item: Any) -> bool:
        """Whether a set's element names a node or a call site the extension made."""
        if isinstance(item, int) and not isinstance(item, bool):
            return item >= self.existing
        if isinstance(item, tuple) and item:
            if len(item) >= 2 and item[0] == self.file and isinstance(item[1], int) and not isinstance(item[1], bool):
                return item[1] >= self.first_call
            return isinstance(item[0], tuple) and self.new(item[0])
        return False


def retract(solver: Solver, journal: Journal) -> str | None:
    """The solver as it was when ``journal`` was taken (None), or why it cannot be: then the
    solver is of no more use."""
    if journal.unknown:
        return f"the solver holds tables the journal does not know ({', '.join(journal.unknown)})"
    if not journal.sound:
        return "the last extension changed what the journal cannot take back"
    existing = journal.existing
    made = range(existing, len(solver.values))
    for name in NODES:
        del getattr(solver, name)[existing:]
    for node, count in journal.watched.items():
        del solver.watchers[node][count:]
    for source, target in journal.edges:
        solver.successors[source].discard(target)
    for pair in journal.repeated:
        count = solver.repeated_edges.pop(pair) - 1
        if count:
            solver.repeated_edges[pair] = count
    for name in APPENDED:
        table = getattr(solver, name)
        for key in list(islice(reversed(table), len(table) - journal.sizes[name])):  # the last ones
            del table[key]
    for name, lengths in journal.by_key.items():
        table = getattr(solver, name)
        for key in list(table)[len(lengths):]:
            del table[key]
        for key, count in lengths.items():
            del table[key][count:]
    for name in SETS:
        table = getattr(solver, name)
        if table is None or len(table) == journal.sizes[name]:
            continue
        # what the extension is known to have added (its nodes, the calls it ran), then, if the
        # set still holds more than it did, every element that names a new node or site
        table.difference_update(journal.calls if name == "called" else made)
        if len(table) != journal.sizes[name]:
            table.difference_update([item for item in table if journal.new(item)])
    for name in LISTS:
        del getattr(solver, name)[journal.sizes[name]:]
    for name, value in journal.scalars.items():
        setattr(solver, name, value)
    file = journal.file
    solver.files[file] = journal.facts
    solver.classes.assigned[file] = journal.assigned
    solver.declared[file] = journal.declared
    solver.assign_sources[file] = journal.sources
    if journal.scoped is None:
        solver.scoped_by_file.pop(file, None)
    else:
        solver.scoped_by_file[file] = journal.scoped
    for name in [name for name in journal.computed(solver) if name not in journal.tables]:
        del solver.__dict__[name]  # first computed during the extension: computed again when read
    for name, value in journal.tables.items():
        if isinstance(getattr(type(solver), name), per_file):
            solver.__dict__[name][file] = value
        else:
            solver.__dict__[name] = value
    grown = [name for name, size in journal.sizes.items() if len(getattr(solver, name)) != size]
    if grown:
        return f"the extension added to {', '.join(grown)} what names no new node or site"
    return None


def mass(table: Any) -> int:
    """How much ``table`` holds: its entries and, where they are containers, theirs (each of
    these tables holds containers in all its entries or in none)."""
    if isinstance(table, (set, frozenset)) or not table:
        return len(table)
    items = table.values() if isinstance(table, dict) else table
    nested = isinstance(next(iter(items)), (set, dict, list))
    return len(table) + (sum(map(len, items)) if nested else 0)
