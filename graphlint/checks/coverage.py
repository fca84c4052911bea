"""What the regions reach: per entry point, the functions it runs and the calls it could not follow.

This is what ``graphlint regions`` prints and what the one coverage line of ``check`` sums up. A
call is *unresolved* when it is written as a name or an attribute of ``self`` (``layer(x)``,
``self.runnable(*args)``) and the assignment graph knows no value at all for what it calls:
there the region may go on into code graphlint does not see. Method calls on other values
(``x.view(...)`` on a tensor) are not listed: they are the bulk of any model and almost never
user code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphlint.checks.link import Project
from graphlint.checks.regions import EntryId, Regions
from graphlint.checks.value_graph import FunctionKey


@dataclass
class EntryReport:
    kind: str
    path: str
    line: int
    via: str
    functions: list[str]
    unresolved: list[dict[str, Any]]
    replaced: bool = False  # a compile the framework replaces with a plain call: no region
    held: str | None = None  # the opt-in preset of the framework whose capture this is: not walked

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "path": self.path, "line": self.line, "via": self.via,
            "functions": self.functions, "unresolved": self.unresolved, "replaced": self.replaced,
            "held": self.held,
        }


@dataclass
class Coverage:
    entries: dict[str, int] = field(default_factory=dict)  # kind → entry points
    functions: dict[str, int] = field(default_factory=dict)  # kind → distinct functions reached
    capture_unresolved: int = 0  # distinct unresolved calls inside capture regions
    replaced: int = 0  # compile entry points a preset says the framework makes plain calls
    held: dict[str, int] = field(default_factory=dict)  # opt-in preset → its framework's captures not walked
    # the project's modules the platform checked cannot import (``unavailable-modules``): not walked
    unimportable: int = 0
    # exported classes whose ``forward`` the runner cannot call (``export-forward-parameters``): no root
    unrun_exports: int = 0
    # the project's functions in capture regions that read a module's name unbound on the
    # platform checked: the blocks that read it raise there and are not analysed (``unbound_names.py``)
    platform_unbound: int = 0
    notice: str | None = None  # the value flow was cut short by its bounds (``CallGraph.notice``)
    # the project's files that parse but whose calls the value flow could not number (its ``ast``
    # and libcst readings disagree): their calls are followed nowhere, so say so
    unnumbered: list[str] = field(default_factory=list)


def entry_reports(project: Project, regions: Regions) -> list[EntryReport]:
    """One report per entry point of the project's own files, and of the libraries on its
    extra paths where they reach the project's code (a host framework capturing a plugin)."""
    reached: dict[EntryId, list[FunctionKey]] = {}
    for key, hits in regions.by_function.items():
        for hit in hits:
            reached.setdefault(hit.entry, []).append(key)
    reports = []
    for entry_id, entry in sorted(regions.entries.items(), key=lambda item: (item[0].file, item[0].index)):
        linked = project.files[entry_id.file]
        functions = reached.get(entry_id, [])
        if linked.library and all(project.files[key.file].library for key in functions):
            continue
        unresolved = _unresolved(project, entry_id, functions, traced=entry.traced)
        reports.append(
            EntryReport(
                kind=entry.kind,
                path=linked.display,
                line=entry.line,
                via=entry.via,
                functions=sorted({project.dotted(key) for key in functions}),
                unresolved=unresolved,
                replaced=entry.replaced,
                held=regions.held.get(entry_id),
            )
        )
    return reports


def _unresolved(project: Project, entry_id: EntryId, functions: list[FunctionKey], *, traced: bool) -> list[dict[str, Any]]:
    sites: list[tuple[int, int]] = []
    entry = project.files[entry_id.file].facts.entries[entry_id.index]
    if not entry.targets:  # a capture block: the calls written inside it
        scope = FunctionKey(entry_id.file, entry.scope)
        block_calls = project.files[entry_id.file].facts.block_calls
        sites += [(entry_id.file, o) for o in project.calls_in(scope) if block_calls.get(o) == entry_id.index]
    for key in functions:
        eager = set(project.files[key.file].facts.eager_calls) if traced else set()
        sites += [(key.file, o) for o in project.calls_in(key) if o not in eager]
    found = []
    for file, ordinal in sorted(set(sites)):
        site = project.site(file, ordinal)
        if site is not None and site.named and not project.resolved(file, ordinal):
            found.append({"path": project.files[file].display, "line": site.line, "call": f"{site.text}(...)"})
    return found


def unrun_exports(project: Project) -> list[dict[str, Any]]:
    """The project's exported classes that are no roots: the framework's runner cannot call
    their ``forward`` (``export-forward-parameters``)."""
    return [
        {"path": project.files[file].display, "line": project.files[file].facts.flow.defs[name].line, "class": name}
        for file, name in project.unrun_exports
        if not project.files[file].library
    ]


def summarize(project: Project, regions: Regions) -> Coverage:
    coverage = Coverage(
        unimportable=sum(not project.files[index].library for index in regions.unimportable),
        unrun_exports=len(unrun_exports(project)),
    )
    reports = entry_reports(project, regions)
    functions: dict[str, set[str]] = {}
    unresolved: set[tuple[str, int, str]] = set()
    for report in reports:
        if report.replaced:
            coverage.replaced += 1
            continue
        if report.held is not None:
            coverage.held[report.held] = coverage.held.get(report.held, 0) + 1
            continue
        coverage.entries[report.kind] = coverage.entries.get(report.kind, 0) + 1
        functions.setdefault(report.kind, set()).update(report.functions)
        if report.kind == "capture":
            unresolved.update((u["path"], u["line"], u["call"]) for u in report.unresolved)
    coverage.functions = {kind: len(names) for kind, names in functions.items()}
    coverage.platform_unbound = sum(
        1
        for key, hits in regions.by_function.items()
        if not project.files[key.file].library
        and key.qualname in project.files[key.file].facts.unbound_reads
        and any(hit.kind == "capture" for hit in hits)
    )
    coverage.capture_unresolved = len(unresolved)
    coverage.unnumbered = [
        linked.display for linked in project.files
        if not linked.library and linked.facts.error is None and linked.facts.flow.error is not None
    ]
    # With no entry point there is no region to be incomplete, and asking would solve the whole
    # value flow for nothing (the standard library: 3 M steps, most of a cold run).
    coverage.notice = project.graph.notice() if reports else None
    return coverage


def coverage_line(coverage: Coverage) -> str:
    """``check``'s one line: entries found, functions reached per kind, unresolved capture calls."""
    kinds = ("compiled", "capture")
    entries = ", ".join(f"{coverage.entries.get(k, 0)} {k}" for k in kinds)
    functions = ", ".join(f"{coverage.functions.get(k, 0)} {k}" for k in kinds)
    line = (
        f"Regions: {entries} entry point(s); functions reached: {functions}; "
        f"{coverage.capture_unresolved} unresolved call(s) in capture regions (see `graphlint regions`)"
    )
    if coverage.replaced:
        line += f"; {coverage.replaced} compile call(s) the framework replaces with a plain call (replaced-entrypoints): no region"
    if coverage.unrun_exports:
        line += (
            f"; {coverage.unrun_exports} exported class(es) whose forward the framework's runner cannot call"
            " (export-forward-parameters): no region"
        )
    if coverage.unimportable:
        line += (
            f"; {coverage.unimportable} module(s) cannot be imported on the platform checked"
            " (unavailable-modules): no region enters them"
        )
    if coverage.platform_unbound:
        line += (
            f"; {coverage.platform_unbound} captured function(s) read a name their module binds only under"
            " platform tests false on the platform checked: the blocks reading it raise there, not analysed"
        )
    if coverage.unnumbered:
        line += (
            f"; {len(coverage.unnumbered)} file(s) whose calls could not be numbered"
            f" ({', '.join(coverage.unnumbered[:3])}{', ...' if len(coverage.unnumbered) > 3 else ''}):"
            " their calls are not followed, please report it"
        )
    for preset, count in sorted(coverage.held.items()):
        line += f"; {count} capture block(s) of {preset} not analysed: its preset is opt-in (presets = [\"{preset}\"])"
    return line if coverage.notice is None else f"{line}; {coverage.notice}"
