"""Compiled and capture regions: which functions run under which entry point, and by what chain.

From every entry point (``facts.EntryFacts``) a breadth-first walk over the call graph marks the
functions it reaches, keeping the shortest chain per entry (``["Model.forward",
"Block.forward"]``). Where dynamo traces (compile entries) the walk stops at region boundaries:
functions marked ``@torch.compiler.disable`` (and friends) and calls made in the eager branch of
``if is_compiling():``. Eager capture (``with torch.npu.graph(g):``, ``capture_begin()``) records
everything it runs, so those boundaries do not stop it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from graphlint.checks.facts import EntryFacts, RegionKind
from graphlint.checks.link import Callee, FunctionKey, Project


@dataclass(frozen=True)
class EntryId:
    file: int
    index: int


@dataclass(frozen=True)
class RegionHit:
    """One way a function (or a block) is reached: from which entry, through which chain."""

    entry: EntryId
    kind: RegionKind
    traced: bool
    entry_label: str  # "pkg/run.py:40"
    dynamic: bool | None
    chain: tuple[str, ...]
    fullgraph: bool = False


@dataclass
class Regions:
    by_function: dict[FunctionKey, list[RegionHit]] = field(default_factory=dict)
    # The capture blocks themselves: sites written inside ``with torch.npu.graph(g):``.
    by_block: dict[EntryId, RegionHit] = field(default_factory=dict)
    entries: dict[EntryId, EntryFacts] = field(default_factory=dict)

    def hits(self, key: FunctionKey) -> list[RegionHit]:
        return self.by_function.get(key, [])


def mark_regions(project: Project) -> Regions:
    regions = Regions()
    for file_index, linked in enumerate(project.files):
        for entry_index, entry in enumerate(linked.facts.entries):
            entry_id = EntryId(file_index, entry_index)
            regions.entries[entry_id] = entry
            label = f"{linked.display}:{entry.line}"

            def hit(chain: tuple[str, ...]) -> RegionHit:
                return RegionHit(entry_id, entry.kind, entry.traced, label, entry.dynamic, chain, bool(entry.fullgraph))

            if entry.targets:
                starts = [
                    (callee, (callee.function.qualname,))
                    for ref in entry.targets
                    for callee in project.resolve(file_index, ref)
                ]
            else:  # a capture block: its sites, and the calls made in it
                scope = FunctionKey(file_index, entry.scope)
                regions.by_block[entry_id] = hit((entry.scope,))
                starts = [
                    (callee, (entry.scope, callee.function.qualname))
                    for edge in project.function(scope).calls
                    if edge.block == entry_index
                    for callee in project.resolve(file_index, edge.ref)
                ]
            _walk(project, regions, starts, hit, traced=entry.traced)
    return regions


def _walk(
    project: Project,
    regions: Regions,
    starts: list[tuple[Callee, tuple[str, ...]]],
    hit: Callable[[tuple[str, ...]], RegionHit],
    *,
    traced: bool,
) -> None:
    seen: set[Callee] = set()
    reached: set[FunctionKey] = set()
    queue: deque[tuple[Callee, tuple[str, ...]]] = deque(
        (callee, chain) for callee, chain in starts if not (traced and project.function(callee.function).boundary)
    )
    while queue:
        callee, chain = queue.popleft()
        if callee in seen:
            continue
        seen.add(callee)
        key = callee.function
        if key not in reached:  # one hit per entry and function: the shortest chain
            reached.add(key)
            regions.by_function.setdefault(key, []).append(hit(chain))
        for edge in project.function(key).calls:
            if traced and edge.eager:
                continue
            for inner in project.resolve(key.file, edge.ref, callee.self_class):
                if inner not in seen and not (traced and project.function(inner.function).boundary):
                    queue.append((inner, (*chain, inner.function.qualname)))
