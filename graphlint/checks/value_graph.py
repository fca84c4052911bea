"""The value graph the solver runs on: nodes holding sets of objects, edges, and the bounds.

The objects (``Obj``) are what a value can be: a function, class or instance of the project, a
bound method, a module, a name outside the project, a ``functools.partial``. Values flow along
edges (``edge``) and *watchers* react to each value a node gains (``watch``: a call site reacts
to a callee it learns); ``propagate`` runs this to the fixed point, within the bounds below.
What the solved graph answers is a ``CallGraph``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Union

from graphlint.checks import apis
from graphlint.checks.facts import FileFacts

Obj = tuple  # ("F"|"C"|"I", file, qualname), ("B", function, receiver), ("S", file, class, receiver),
#             ("M", module), ("X", dotted), ("P", file, ordinal), ("H", method), ("W", file, ordinal[, copy])
EXTERNAL_VALUE: Obj = ("X", "")  # what a call outside the project returns
# A tensor made on the host on purpose (``facts.host_calls``: ``device="cpu"``, ``.cpu()``), and
# ("H", method) its methods: followed so that ``.tolist()`` of one, passed or stored elsewhere,
# is known to read host memory.
HOST_TENSOR: Obj = ("H", "")
MAX_DEPTH = 16
# Bounds that keep the fixed point a matter of seconds on any tree (sglang's srt, transformers'
# models/). A node holding more than VALUE_CAP values is *saturated*: it takes no more, and the
# calls through it count as unresolved (what it already holds are still values it can have, so
# no link is wrong; the region may be incomplete). Past OUTSIDE_CAP outside names in a node, the
# node holds OUTSIDE_ANY ("some outside names") in place of all of them (they resolve to no
# project function either way). Past WORK_BUDGET steps (values delivered, deliveries a saturated
# node refused, reactions run) the solve stops, and the run says so (``CallGraph.stopped``).
VALUE_CAP = 256
OUTSIDE_CAP = 16
WORK_BUDGET = 3_000_000
# The collapse of outside names is absorbing, so that the solve has one answer whatever order the
# values arrive in (the least fixed point of a lattice where a node's outside names are a set of at
# most OUTSIDE_CAP names or OUTSIDE_ANY above them all): a node that passes the cap drops the names
# it held, and OUTSIDE_ANY, handed on, absorbs the names it handed on before. What a name handed
# on did is covered by what OUTSIDE_ANY does: an attribute of it, a call of it (its arguments
# handed outside) and its call's result are OUTSIDE_ANY, a site that calls it runs the outside
# name "*", an ``isinstance`` test of it is not known. Not collapsed (KEPT_OUTSIDE): the names
# the solver treats by name (``functools.partial``, ``builtins.list``...) and every dotted prefix
# of them (``functools``), since an attribute of one may be one of them; so no collapse changes
# the project's own values.
OUTSIDE_ANY: Obj = ("X", "*")


def _with_prefixes(names: Iterable[str]) -> frozenset[str]:
    parts = [name.split(".") for name in names]
    return frozenset(".".join(p[:end]) for p in parts for end in range(1, len(p) + 1))


KEPT_OUTSIDE = _with_prefixes(apis.PASS_THROUGH_CALLS | apis.CALLS_ITS_ARGUMENTS | apis.PARTIAL_FUNCTIONS)


def collapsible(obj: Obj) -> bool:
    """An outside value OUTSIDE_ANY stands for: an outside name not in KEPT_OUTSIDE, the value of
    an outside call (EXTERNAL_VALUE), OUTSIDE_ANY itself."""
    return obj[0] == "X" and obj[1] not in KEPT_OUTSIDE


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


Rest = tuple[int, str, str]  # (file, function, parameter): a function's ``*args`` or ``**kwargs``


@dataclass
class CallArgs:
    """A call's arguments as nodes."""

    positional: list[int | None] = field(default_factory=list)
    star: list[int] = field(default_factory=list)
    keywords: list[tuple[str, int | None]] = field(default_factory=list)
    double_star: list[int] = field(default_factory=list)
    # ``f(a, *args)`` / ``f(**kwargs)`` in a function that takes ``*args`` / ``**kwargs``: handed on
    # element by element (position after ``positional``, keyword by name), not as one value
    forwarded_star: list[Rest] = field(default_factory=list)
    forwarded_keywords: list[Rest] = field(default_factory=list)

    def target(self) -> int | None:
        """What a compile call compiles: its first positional argument, else the target handed by
        keyword (``torch.compile(model=f)``: ``apis.COMPILE_TARGET_KEYWORDS``)."""
        if self.positional:
            return self.positional[0]
        return next((node for name, node in self.keywords if name in apis.TARGET_KEYWORD_NAMES), None)

    def nodes(self) -> list[int]:
        """The nodes handed as they are (not the forwarded ``*args``/``**kwargs`` elements)."""
        return [n for n in (*self.positional, *self.star, *(n for _, n in self.keywords), *self.double_star) if n is not None]

    def with_receiver(self, receiver: int) -> "CallArgs":
        """The arguments of a method called through an instance: the receiver comes first."""
        return CallArgs([receiver, *self.positional], self.star, self.keywords, self.double_star,
                        self.forwarded_star, self.forwarded_keywords)


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
    # (file, call ordinal) of ``x.m()`` calls whose receiver ``x`` holds host tensors only
    host_receivers: set[tuple[int, int]] = field(default_factory=set)
    # (file, call ordinal) of calls whose callee holds instances of project classes only (in
    # every copy): calling one runs its ``forward`` / ``__call__`` with the call's own arguments
    # (``instance_calls``; not a ``functools.partial``, whose bound arguments come first)
    instance_calls: set[tuple[int, int]] = field(default_factory=set)
    saturated: int = 0  # nodes that reached VALUE_CAP values and took no more
    collapsed: int = 0  # nodes whose outside names were collapsed into OUTSIDE_ANY
    # (file, qualname, copy; "*": every copy) of the functions something out of sight may call,
    # with arguments graphlint does not see (``parameter_constants.py``)
    unseen: set[tuple[int, str, str]] = field(default_factory=set)
    # Where methods' copies per receiver class (``receiver_copies.py``) take part: per site and
    # copy (``(file, ordinal, copy)``, ``""`` the method's own body; ``("entry", file, index)``)
    # the (target, the target's copy) it runs. Sites not here run ``callees`` in every copy.
    copies: dict[tuple[Any, ...], dict[tuple[Target, str], str]] = field(default_factory=dict)
    # ``torch.compile(f)``'s wrapper (``compile_wrappers.py``): (file, call ordinal) → the compile
    # calls (file, ordinal) whose wrappers the call may run; the calls that run nothing else; the
    # compile calls whose wrappers are handed to code outside the project
    wrapper_calls: dict[tuple[int, int], set[tuple[int, int]]] = field(default_factory=dict)
    wrapper_only: set[tuple[int, int]] = field(default_factory=set)
    escaped_wrappers: set[tuple[int, int]] = field(default_factory=set)

    def notice(self) -> str | None:
        """What a run must say when the bounds cut the solve short (None when they did not)."""
        if self.stopped is not None:
            return f"value flow stopped after {self.stopped:,} steps; regions may be incomplete"
        if self.saturated:
            return f"value flow: {self.saturated:,} value set(s) past {VALUE_CAP} values left unresolved; regions may be incomplete"
        return None


def delivered(values: set[Obj]) -> int:
    """The most values a node took: those it holds and, if it collapsed, the names it dropped."""
    return len(values) + (OUTSIDE_CAP if OUTSIDE_ANY in values else 0)


def instance_calls(
    callee_nodes: Mapping[tuple[Any, ...], int], values: list[set[Obj]], saturated: set[int]
) -> set[tuple[int, int]]:
    """The call sites (``(file, ordinal)``, over a method's copies) whose callee holds instances
    of project classes and nothing else, in every copy: ``self.experts(h, topk)`` of an MoE
    layer, not a partial of one (``CallGraph.instance_calls``)."""
    sites: set[tuple[int, int]] = set()
    mixed: set[tuple[int, int]] = set()
    for key, node in callee_nodes.items():
        site = (key[0], key[1])
        held = values[node]
        if held and node not in saturated and all(obj[0] == "I" for obj in held):
            sites.add(site)
        else:
            mixed.add(site)
    return sites - mixed


def instance_of(obj: Obj) -> Obj:
    """A class stands for its instances; anything else for itself."""
    return ("I", obj[1], obj[2]) if obj[0] == "C" else obj


class ValueGraph:
    """Nodes, edges and watchers, and the nodes named by what they stand for."""

    def __init__(self) -> None:
        self.values: list[set[Obj]] = []
        self.successors: list[set[int]] = []
        self.watchers: list[list[Callable[[Iterable[Obj]], None]]] = []
        self.pending: list[tuple[int, set[Obj]]] = []
        # (source, target) → how many times ``edge`` made it after the first: its makers (calls'
        # and watchers' reactions, assignments) less one, so that ``project_calls.py`` removes
        # an edge only with its last maker (only edges made more than once are here)
        self.repeated_edges: dict[tuple[int, int], int] = {}
        self.variables: dict[tuple[int, str], int] = {}
        self.constants: dict[Obj, int] = {}
        self.results: dict[tuple[int, int], int] = {}
        self.decorated: dict[tuple[int, int], int] = {}
        self.iterated: dict[tuple[int, int], int] = {}
        self.saturated: set[int] = set()
        self.typed: set[int] = set()  # nodes that keep only ``typed_values`` (``declared_types.py``)
        self.refused: set[Obj] = set()  # what saturated sets refused: calls through them are not all seen
        self.steps = 0
        self.stopped = False
        self.collapsed = 0  # nodes whose outside names were collapsed into OUTSIDE_ANY
        # Nodes that gained values after the first fixed point, in the rounds of its decisions
        # (None until then): ``incremental_solve.py`` may deliver again only into the others.
        self.late: set[int] | None = None

    def node(self) -> int:
        self.values.append(set())
        self.successors.append(set())
        self.watchers.append([])
        return len(self.values) - 1

    def add(self, node: int, objects: Iterable[Obj]) -> None:
        if self.stopped:
            return
        if node in self.saturated:  # refused, but a delivery all the same: it counts
            self.refused.update(objects)
            self.spend(1)
            return
        held = self.values[node]
        if node in self.typed:
            objects = self.typed_values(objects)
        new = set(objects) - held
        if not new:
            return
        if OUTSIDE_ANY in held:  # collapsed: outside names are absorbed
            new = {o for o in new if not collapsible(o)}
            if not new:
                return
        elif OUTSIDE_ANY in new or len(held) + len(new) > OUTSIDE_CAP:
            outside = {o for o in new if collapsible(o)}
            if OUTSIDE_ANY in new or (outside and sum(1 for o in held if collapsible(o)) + len(outside) > OUTSIDE_CAP):
                # what it held of them is retracted: OUTSIDE_ANY absorbs what they were handed
                # on to, and covers what they did (the comment at OUTSIDE_ANY)
                held -= {o for o in held if collapsible(o)}
                new = (new - outside) | {OUTSIDE_ANY}
                self.collapsed += 1
        if len(held) + len(new) > VALUE_CAP:
            self.saturated.add(node)
            self.refused.update(new)
            self.spend(1)
            return
        if self.spend(len(new)):
            held |= new
            self.pending.append((node, new))
            if self.late is not None:
                self.late.add(node)

    def typed_values(self, objects: Iterable[Obj]) -> Iterable[Obj]:
        """What a node of ``typed`` takes of ``objects``."""
        return objects

    def spend(self, steps: int) -> bool:
        """Count ``steps`` of work against the budget; False (and the solve stopped) past it."""
        self.steps += steps
        if self.steps > WORK_BUDGET:
            self.stopped = True
            self.pending.clear()
        return not self.stopped

    def edge(self, source: int | None, target: int) -> None:
        if source is None or source == target:
            return
        if target in self.successors[source]:
            pair = (source, target)
            self.repeated_edges[pair] = self.repeated_edges.get(pair, 0) + 1
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

    def _node_in(self, table: dict[Any, int], key: Any) -> int:
        """The node ``table`` keeps for ``key``, made on first use."""
        node = table.get(key)
        if node is None:
            node = table[key] = self.node()
        return node

    def variable(self, file: int, key: str) -> int:
        return self._node_in(self.variables, (file, key))

    def result(self, file: int, ordinal: int) -> int:
        return self._node_in(self.results, (file, ordinal))

    def iteration_result(self, file: int, index: int) -> int:
        return self._node_in(self.iterated, (file, index))

    def decorated_result(self, file: int, index: int) -> int:
        return self._node_in(self.decorated, (file, index))
