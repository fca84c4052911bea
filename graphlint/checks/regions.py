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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from graphlint.checks.edge_conditions import Edge, runs
from graphlint.checks.element_conditions import captures
from graphlint.checks.facts import EntryFacts, RegionKind
from graphlint.checks.fixed_attributes import NO_TESTS, FixedAttributes, Tests
from graphlint.checks.importable import unimportable_files
from graphlint.checks.link import Project
from graphlint.checks.mode_flow import ModeFlow, Modes, covers, join, meet
from graphlint.checks.none_returns import uncaptured_by_returns
from graphlint.checks.presets import glob_pattern
from graphlint.checks.parameter_constants import edge_given, live_entry_functions, live_entry_starts
from graphlint.checks.value_graph import FunctionKey


@dataclass(frozen=True)
class EntryId:
    file: int
    index: int


@dataclass(frozen=True)
class ChainStep:
    """One function of a chain, and where the chain enters it: the line of the call in the
    function before it, or, for the first function, the entry (the target's ``def``, or the
    capture block's ``with``)."""

    function: str  # its qualified name in its module: "Block.forward"
    path: str  # of ``line``, as reported
    line: int


@dataclass(frozen=True)
class RegionHit:
    """One way a function (or a block) is reached: from which entry, through which chain."""

    entry: EntryId
    kind: RegionKind
    traced: bool
    entry_label: str  # "pkg/run.py:40"
    dynamic: bool | None
    steps: tuple[ChainStep, ...]
    fullgraph: bool = False
    # Eager capture only: before its last function, the chain enters one a compile entry
    # compiles (a compiled model run inside the capture): dynamo traces from there, and inlines.
    through_compile: bool = False
    # Eager capture only: before its last function, the chain runs an ``nn.Module``'s ``forward``
    # (``Project.runs_module``): its last function is reached inside a module the capture runs
    # eagerly (a submodule's), not called by the capture code itself.
    through_module: bool = False

    @property
    def chain(self) -> tuple[str, ...]:
        return tuple(step.function for step in self.steps)


@dataclass
class Regions:
    by_function: dict[FunctionKey, list[RegionHit]] = field(default_factory=dict)
    # The capture blocks themselves: sites written inside ``with torch.npu.graph(g):``.
    by_block: dict[EntryId, RegionHit] = field(default_factory=dict)
    entries: dict[EntryId, EntryFacts] = field(default_factory=dict)
    # Capture blocks of a framework whose preset is opt-in and off, not walked: entry → preset
    held: dict[EntryId, str] = field(default_factory=dict)
    # Files that cannot be imported on the platform checked → the module whose import fails
    # first on their way (``unavailable-modules``, ``importable.py``): no region enters them
    unimportable: dict[int, str] = field(default_factory=dict)
    # The capture modes a capture entry runs each function it reaches in, where not all (``mode_flow.py``)
    modes: dict[tuple[EntryId, FunctionKey], frozenset[str]] = field(default_factory=dict)
    everywhere: set[tuple[EntryId, FunctionKey]] = field(default_factory=set)  # … entered in every mode
    mode_flow: ModeFlow | None = None

    def entered_modes(self, entry: EntryId, key: FunctionKey) -> Modes:
        """The modes entry ``entry`` runs ``key`` in (None: every mode)."""
        return self.modes.get((entry, key))
    # Call-form compile entries (``g = torch.compile(f)``) whose wrapper's calls are followed
    # (``compile_wrappers.py``), and per such entry how other entries reach it: through a call
    # of its wrapper, with the function the wrapper runs (GL101 asks these, not ``f``'s own calls)
    wrapped: set[EntryId] = field(default_factory=set)
    wrapper_hits: dict[EntryId, list[tuple[FunctionKey, RegionHit]]] = field(default_factory=dict)

    def hits(self, key: FunctionKey) -> list[RegionHit]:
        return self.by_function.get(key, [])


def mark_regions(
    project: Project,
    other_platform_modules: tuple[str, ...] = (),
    outside_regions: tuple[str, ...] = (),
    held: Mapping[str, str] | None = None,
    outside_captures: tuple[str, ...] = (),
    unavailable_modules: tuple[str, ...] = (),
) -> Regions:
    """``other_platform_modules``: globs of code that runs only on platforms graphlint does not
    check (``other-platform-modules``): modules, whose functions no region enters, or classes'
    and functions' dotted names (``pkg.vision.RocmAttention.*``: one backend class of a module
    that holds every platform's); nor the functions ``outside_regions`` names
    (``outside-regions``: globs of dotted names); nor, from a capture entry, the functions
    ``outside_captures`` names (``outside-captures``: a compiled region still enters them).
    ``held``: top-level module → opt-in preset of the frameworks whose own capture blocks are
    left out (``presets.framework_presets``). ``unavailable_modules``: what the platform checked
    cannot import (``unavailable-modules``): the modules that import them are left out as
    ``other_platform_modules`` are."""
    regions = Regions(unimportable=unimportable_files(project.files, unavailable_modules), mode_flow=ModeFlow(project))
    held_patterns = [(glob_pattern(f"{module}.**"), preset) for module, preset in (held or {}).items()]
    patterns = [glob_pattern(glob) for glob in other_platform_modules]
    foreign: set[int] = set()
    if patterns:  # (a large project's files are matched only where globs are configured)
        foreign = {index for index, linked in enumerate(project.files) if any(p.match(linked.module) for p in patterns)}
    foreign |= regions.unimportable.keys()
    outside = _named_functions(project, outside_regions + other_platform_modules)
    outside_capture = outside | _named_functions(project, outside_captures)
    wrappers = _followed_wrappers(project)
    attributes = FixedAttributes(project)
    regions.wrapped = {entry for entry, _ in wrappers.values()}
    compiled_by = {
        EntryId(file_index, entry_index): live_entry_functions(project, file_index, entry_index)
        for file_index in project.entry_files
        for entry_index, entry in enumerate(project.files[file_index].facts.entries)
        if entry.traced and not entry.replaced
    }
    compiled = {key for functions in compiled_by.values() for key in functions}
    # ``g = torch.compile(f)`` leaves ``f`` eager: its calls by its own name run it as it is,
    # only its wrapper's calls run it compiled (a walk's start keeps both: it may be the wrapper)
    compiled_by_name = {key for entry, functions in compiled_by.items() if entry not in regions.wrapped for key in functions}
    for file_index in project.entry_files:
        linked = project.files[file_index]
        for entry_index, entry in enumerate(linked.facts.entries):
            entry_id = EntryId(file_index, entry_index)
            regions.entries[entry_id] = entry
            if entry.replaced:  # the framework makes this compile a plain call: no region
                continue
            preset = next((name for pattern, name in held_patterns if pattern.match(linked.module)), None)
            if entry.kind == "capture" and entry.via not in ("config", "root") and preset is not None:  # configured: wanted
                regions.held[entry_id] = preset
                continue
            label = f"{linked.display}:{entry.line}"

            def hit(steps: tuple[ChainStep, ...], through: bool, module: bool) -> RegionHit:
                return RegionHit(
                    entry_id, entry.kind, entry.traced, label, entry.dynamic, steps, bool(entry.fullgraph),
                    through_compile=through and not entry.traced,
                    through_module=module and not entry.traced,
                )

            if entry.targets:
                starts = [
                    (key, copy, (ChainStep(key.qualname, project.files[key.file].display, project.function(key).line),), None)
                    for key, copy in live_entry_starts(project, file_index, entry_index)
                ]
            else:  # a capture block: its sites, and the calls made in it
                scope = FunctionKey(file_index, entry.scope)
                block = ChainStep(entry.scope, linked.display, entry.line)
                regions.by_block[entry_id] = hit((block,), False, False)
                starts = [
                    (callee, copy, (block, _called(project, file_index, ordinal, callee)), (file_index, ordinal))
                    for ordinal in project.calls_in(scope)
                    if linked.facts.block_calls.get(ordinal) == entry_index
                    for callee, copy in project.runs_in(file_index, ordinal, None)
                ]
            skip = outside_capture if entry.kind == "capture" else outside
            starts = [start for start in starts if start[0].file not in foreign and start[0] not in skip]
            _walk(
                project, regions, starts, hit, traced=entry.traced, compiled=(compiled, compiled_by_name), wrappers=wrappers,
                foreign=foreign, outside=skip, entry=entry_id, attributes=attributes,
            )
    return regions


Wrappers = dict[tuple[int, int], tuple[EntryId, set[FunctionKey]]]


def _followed_wrappers(project: Project) -> Wrappers:
    """The compile calls of call-form entries (``torch.compile(f)``, ``optimize(b)(f)``) whose
    wrappers some call of the project runs and no outside code is handed: each one's entry and
    the functions it compiles. An entry whose wrapper is never called, or escapes, keeps its
    region entered by ``f``'s own calls too (what its wrapper does is not seen)."""
    by_call = {
        (file_index, entry.targets[0][1]): EntryId(file_index, entry_index)
        for file_index in project.entry_files
        for entry_index, entry in enumerate(project.files[file_index].facts.entries)
        if entry.via == "call" and entry.traced and not entry.replaced and [t[0] for t in entry.targets] == ["arg"]
    }
    if not by_call:  # asked only where there are such entries: no entry point, no solve
        return {}
    graph = project.graph
    called = {compile_call for compiles in graph.wrapper_calls.values() for compile_call in compiles}
    return {
        compile_call: (entry, set(live_entry_functions(project, entry.file, entry.index)))
        for compile_call, entry in by_call.items()
        if compile_call in called and compile_call not in graph.escaped_wrappers
    }


def _walk(
    project: Project,
    regions: Regions,
    starts: list[tuple[FunctionKey, str, tuple[ChainStep, ...], Edge | None]],
    hit: Callable[[tuple[ChainStep, ...], bool, bool], RegionHit],
    *,
    traced: bool,
    compiled: tuple[set[FunctionKey], set[FunctionKey]],
    wrappers: Wrappers,
    foreign: set[int],
    outside: set[FunctionKey],
    entry: EntryId,
    attributes: FixedAttributes,
) -> None:
    """Breadth first over (function, copy): a method of a shared base runs, in its copy for the
    receiver's class, only what that class's objects run (``receiver_copies.py``). A call under
    an ``if`` on the function's parameters runs only if some edge into the function that the
    region takes can make the test hold (``edge_conditions.py``; in a capture, also a test of an
    element of a tuple the edge hands over: ``element_conditions.py``): a function is walked again
    when another edge enters it, for the calls it has not run yet. A capture enters a callee in
    the modes of its caller that the call is made in (``mode_flow.py``): a function is walked
    again when an edge enters it in a mode it was not run in, for the calls it makes there. A
    call ``self.B(...)`` skips the functions that the tests on fixed ``self`` attributes around it,
    and those ``self.m(...)`` calls hand in, say ``B`` cannot hold there (``fixed_attributes.py``):
    a function is walked again when entered under other such tests, and, where such a call skipped
    some, entered under other tests at all.
    ``compiled``: the functions compile entries compile, and those of them every call runs
    compiled (not the targets of ``wrappers``, which run compiled where their wrapper's call
    enters them)."""
    flow = regions.mode_flow
    assert flow is not None
    # the calls each one has run, with the modes it ran them in; the modes it was entered in
    followed: dict[tuple[FunctionKey, str], dict[int, Modes]] = {}
    entered: dict[tuple[FunctionKey, str], Modes] = {}
    walked_with: dict[tuple[FunctionKey, str], set[Tests]] = {}  # the tests on ``self`` each was walked under
    narrowed: set[tuple[FunctionKey, str]] = set()  # … that skipped a function of a ``self.B(...)`` call
    marked: set[FunctionKey] = set()
    compiled_start, compiled_by_name = compiled
    # Each item also says whether its chain entered a compiled function before it (``through_compile``)
    # and a module's ``forward`` (``through_module``: asked of eager captures only), whether it
    # runs compiled itself, the copy of the function that made the call ``edge`` (what its
    # arguments hold there), and the modes the call enters it in (a compiled region's: every mode).
    queue: deque[tuple[FunctionKey, str, tuple[ChainStep, ...], Edge | None, bool, bool, bool, str, Modes, Tests]] = deque(
        (*start, False, False, start[0] in compiled_start, "", None if traced or start[3] is None else flow.call(*start[3]), NO_TESTS)
        for start in starts
        if not (traced and project.function(start[0]).boundary)
    )
    wrapper_seen: set[tuple[EntryId, bool, bool]] = set()
    while queue:
        key, copy, chain, edge, through, module, runs_compiled, caller_copy, modes, tests = queue.popleft()
        if modes is not None and not modes:
            continue
        fresh = tests not in walked_with.setdefault((key, copy), set())
        walked_with[key, copy].add(tests)
        done = followed.get((key, copy))
        if done is None:
            done = followed[key, copy] = {}
            if key not in marked:  # one hit per entry and function: the shortest chain
                marked.add(key)
                regions.by_function.setdefault(key, []).append(hit(chain, through, module))
        modes = entered[key, copy] = join(entered.get((key, copy), frozenset()), modes)
        if not traced:
            _note_modes(regions, entry, key, modes)
        module_after = module or (not traced and project.runs_module(key))
        facts = project.files[key.file].facts
        # not followed: calls dynamo does not trace (compiled), calls in a branch no capture takes,
        # or that a helper returning None for a capture batch decides (``none_returns.py``)
        skipped = set(facts.eager_calls) if traced else {*facts.uncaptured_calls, *uncaptured_by_returns(project, key, copy)}
        # what the edge hands over, beyond the arguments' form (read only where a call is under an ``if``)
        given = (lambda e=edge, k=key, c=caller_copy: edge_given(project, e, k, c)) if edge is not None else None
        for ordinal in project.calls_in(key):
            if ordinal in skipped:
                continue
            call_modes = modes if traced else meet(modes, flow.call(key.file, ordinal))
            if call_modes is not None and not call_modes:
                continue
            call_tests = tests | attributes.own(key.file, ordinal)
            if (ordinal in done and covers(done[ordinal], call_modes) and not (fresh and call_tests)) or not runs(
                project, edge, key, ordinal, given
            ):
                continue
            if not traced and not captures(project, edge, key, ordinal, caller_copy):
                continue
            skipped_here = attributes.dropped(key.file, ordinal, call_tests) if call_tests else frozenset()
            if skipped_here:  # followed again when entered otherwise
                narrowed.add((key, copy))
                call_modes = join(done.get(ordinal, frozenset()), call_modes)
            else:
                done[ordinal] = call_modes = join(done.get(ordinal, frozenset()), call_modes)
            wrapper_entries = [wrappers[c] for c in project.graph.wrapper_calls.get((key.file, ordinal), ()) if c in wrappers]
            for inner, inner_copy in project.runs_in(key.file, ordinal, copy):
                if (traced and project.function(inner).boundary) or inner.file in foreign or inner in outside or inner in skipped_here:
                    continue
                through_inner = through or runs_compiled
                wrapped = [compile_entry for compile_entry, functions in wrapper_entries if inner in functions]
                for wrapped_entry in wrapped:  # the wrapper's call: how this walk reaches that entry
                    seen = (wrapped_entry, through_inner, module_after)
                    if seen not in wrapper_seen:
                        wrapper_seen.add(seen)
                        step = _called(project, key.file, ordinal, inner)
                        regions.wrapper_hits.setdefault(wrapped_entry, []).append(
                            (inner, hit((*chain, step), through_inner, module_after))
                        )
                inner_done = followed.get((inner, inner_copy))
                inner_tests = attributes.handed(key.file, ordinal, inner, call_tests)
                if (
                    inner_done is None
                    or _waiting(project, inner, inner_done, traced)
                    or not covers(entered.get((inner, inner_copy), frozenset()), call_modes)
                    or (
                        inner_tests not in walked_with.get((inner, inner_copy), ())
                        and (bool(inner_tests) or (inner, inner_copy) in narrowed)
                    )
                ):
                    step = _called(project, key.file, ordinal, inner)
                    inner_compiled = inner in compiled_by_name or (bool(wrapped) and (key.file, ordinal) in project.graph.wrapper_only)
                    queue.append(
                        (
                            inner, inner_copy, (*chain, step), (key.file, ordinal), through_inner, module_after,
                            inner_compiled, copy, call_modes, inner_tests,
                        )
                    )


def _note_modes(regions: Regions, entry: EntryId, key: FunctionKey, modes: Modes) -> None:
    """What a capture entry runs ``key`` in, over its copies (every mode: nothing kept)."""
    if modes is None:
        regions.modes.pop((entry, key), None)
        regions.everywhere.add((entry, key))
    elif (entry, key) not in regions.everywhere:
        regions.modes[entry, key] = regions.modes.get((entry, key), frozenset()) | modes


def _named_functions(project: Project, globs: tuple[str, ...]) -> set[FunctionKey]:
    """The project's functions whose dotted names (``module.Class.method``) a glob matches."""
    if not globs:
        return set()
    patterns = [glob_pattern(glob) for glob in globs]
    return {
        FunctionKey(index, name)
        for index, linked in enumerate(project.files)
        for name, definition in linked.facts.flow.defs.items()
        if definition.kind == "function" and any(p.match(f"{linked.module}.{name}") for p in patterns)
    }


def _waiting(project: Project, key: FunctionKey, done: dict[int, Modes], traced: bool) -> bool:
    """Whether ``key`` has conditional calls no edge has run yet (another edge may); a capture's
    also those under a test of a parameter's element (``element_conditions.py``)."""
    facts = project.files[key.file].facts
    conditional = facts.flow.call_conditions
    elements = {} if traced else facts.uncaptured_unless_elements
    return any(ordinal not in done and (ordinal in conditional or ordinal in elements) for ordinal in project.calls_in(key))


def _called(project: Project, file: int, ordinal: int, callee: FunctionKey) -> ChainStep:
    """``callee`` as a step of a chain, entered by call ``ordinal`` of ``file``."""
    site = project.files[file].facts.flow.calls[ordinal]
    return ChainStep(callee.qualname, project.files[file].display, site.line if site is not None else 0)
