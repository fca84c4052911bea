"""The static check, end to end: paths → files → facts → project → regions → findings.

Everything users configure is applied here, once: the framework presets and the knowledge keys
(``presets.py``, ``roots.py``), which rules are selected (``--select`` /
``--ignore`` / ``[tool.graphlint]``, by code prefix), per-file ignores, and ``# graphlint:
ignore[...]`` comments. Rules only ever produce candidates.

When the paths name single files (pre-commit passes just the changed ones), they are linked
with the rest of the project (the nearest ``pyproject.toml`` or ``.git``) that can reach them —
their importers, transitively, and what those import — from the cache where possible, so that a
helper reached from a model compiled in another file is still seen; findings are reported for
the named files only.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from graphlint.checks.cache import CACHE_DIR_ENV, CACHE_DIR_NAME, FactsCache
from graphlint.checks.catalog import Catalog
from graphlint.checks.collect import collect_facts
from graphlint.checks.coverage import Coverage, summarize
from graphlint.checks.discover import discover
from graphlint.checks.facts import ExtractOptions, FileFacts
from graphlint.checks.findings import Finding, candidate_finding, parse_error, project_findings
from graphlint.checks.graph_cache import SolvedGraphs
from graphlint.checks.presets import framework_presets, knowledge
from graphlint.checks.link import LinkedFile, LinkedFiles, Project
from graphlint.checks.modules import ImportedHeads, ModuleNames, module_name
from graphlint.checks.class_hierarchy import absolute_name
from graphlint.checks.regions import Regions, mark_regions
from graphlint.checks.roots import add_root_entries
from graphlint.checks.selection import Selection
from graphlint.config import DEFAULT_PLATFORM, Config, ConfigError, Knowledge, find_project_root, load_config


@dataclass
class CheckOptions:
    paths: list[Path]
    select: tuple[str, ...] = ()  # replaces the config's select when given
    ignore: tuple[str, ...] = ()  # added to the config's ignore
    jobs: int = 0  # 0: all cores
    use_cache: bool = True
    cache_dir: Path | None = None
    extra_paths: tuple[Path, ...] = ()  # --extra-path: read-only context, added to extra-paths


@dataclass
class CheckResult:
    findings: list[Finding]
    files: int
    seconds: float
    internal_errors: int = 0
    presets: list[str] = field(default_factory=list)  # the framework presets the run used
    coverage: Coverage | None = None
    platform: str = DEFAULT_PLATFORM  # the device the knowledge was read for (``[tool.graphlint] platform``)
    held_presets: list[str] = field(default_factory=list)  # opt-in presets of imported frameworks, not configured


@dataclass
class LinkedProject:
    """The paths' files linked with their context: what every command that reads regions needs."""

    root: Path
    config: Config
    targets: int  # the first ``targets`` files of ``project`` are the ones named on the command line
    project: Project
    regions: Regions
    selection: Selection
    catalog: Catalog
    presets: list[str] = field(default_factory=list)  # the framework presets the run used
    held_presets: list[str] = field(default_factory=list)  # opt-in, not configured: only what narrows


def run_check(options: CheckOptions) -> CheckResult:
    """Raises ``ConfigError`` for a malformed ``[tool.graphlint]`` or a mistyped code."""
    started = time.perf_counter()
    linked = link_paths(options)
    findings, internal = judge_linked(
        linked.project, linked.regions, range(linked.targets), linked.root, linked.selection, linked.catalog
    )
    coverage = summarize(linked.project, linked.regions)
    elapsed = time.perf_counter() - started
    return CheckResult(
        findings, linked.targets, elapsed, internal, linked.presets, coverage, linked.config.platform, linked.held_presets
    )


def link_paths(options: CheckOptions) -> LinkedProject:
    """Paths → facts → one linked project and its regions. Raises ``ConfigError``."""
    paths = options.paths or [Path(".")]
    root = find_project_root(paths[0])
    config = load_config(root)
    targets = discover(paths, root, config.exclude)
    presets, held = framework_presets(config, targets)
    known = knowledge(config, presets, held.values())
    extract_options = extract_options_of(known)
    cache = FactsCache(cache_dir(options.cache_dir, root), extract_options) if options.use_cache else None
    catalog = Catalog(cache)
    # Before any file is parsed: a mistyped code is a usage error.
    selection = Selection(config, options.select, options.ignore, catalog.codes())
    jobs = options.jobs or os.cpu_count() or 1

    def load(files: list[Path]) -> dict[Path, FileFacts]:
        return collect_facts(files, extract_options, cache, jobs)

    if any(not p.is_dir() for p in paths):
        facts = _with_project_context(targets, root, config, load)
    else:
        facts = load(targets)
    # The link order (files are numbered by it, and the solved graph is kept under it): the
    # targets as found, then their context by path; never the order a pool parsed them in.
    facts = {path: facts[path] for path in [*(t for t in targets if t in facts), *sorted(set(facts).difference(targets))]}
    # Code outside the project that runs it (a host framework for a plugin): read-only context,
    # linked for its regions and never reported. Each directory is an import root.
    extra = [root / p for p in config.extra_paths] + list(options.extra_paths)
    missing = [str(d) for d in extra if not d.is_dir()]
    if missing:  # a typo would silently leave the host framework unread
        raise ConfigError(f"extra path is not a directory: {', '.join(missing)}")
    libraries = [f for f in discover(extra, root) if f not in facts]
    facts.update(load(libraries))
    names = module_names(root, config, facts, extra)
    project, regions = link(
        targets, facts, known, names, libraries, graphs=SolvedGraphs(cache), preview=config.preview, held=held
    )
    held_presets = sorted(set(held.values()))
    return LinkedProject(root, config, len(targets), project, regions, selection, catalog, presets, held_presets)


def module_names(
    root: Path,
    config: Config,
    facts: Mapping[Path, FileFacts],
    extra: Iterable[Path] = (),
    kept: ModuleNames | None = None,
    heads: ImportedHeads | None = None,
) -> ModuleNames:
    """How the files of ``facts`` are named as modules: up to the configured import roots (and
    the extra paths), else to the roots the project's own absolute imports show. ``kept``: the
    naming of an earlier check, used again (with the names it found) when it has the same roots;
    ``heads``: the imports' heads of an earlier check, taken again for the changed files only."""
    names = ModuleNames([*(root / src for src in config.src), *extra], (heads or ImportedHeads()).of(facts), top=root)
    if kept is not None and (kept.roots, kept.imported, kept.top) == (names.roots, names.imported, names.top):
        return kept
    return names


def link(
    targets: Sequence[Path],
    facts: Mapping[Path, FileFacts],
    known: Knowledge,
    names: ModuleNames,
    libraries: Sequence[Path] = (),
    display: Callable[[Path], str] = lambda path: display_path(path),
    graphs: SolvedGraphs | None = None,
    preview: bool = False,
    held: Mapping[str, str] | None = None,
    linked_files: LinkedFiles | None = None,
) -> tuple[Project, Regions]:
    """Every file of ``facts`` linked, in the order of ``facts`` (``link_paths`` puts the targets
    first), then the read-only ``libraries``, with what ``known`` says of frameworks, and the
    regions marked on it. ``graphs``: where solved call graphs are kept (none: the graph is
    solved); an order that does not change with the targets (a session's) keeps their key.
    ``preview``: the value flow's preview contexts (``[tool.graphlint] preview``). ``held``: the
    frameworks whose own capture blocks are not analysed (``presets.framework_presets``).
    ``linked_files``: the files linked by an earlier call, taken again where their facts are the same."""
    read_only = set(libraries)
    own = [path for path in facts if path not in read_only] if read_only else facts.keys()
    files = (linked_files or LinkedFiles()).linked(own, facts, names, display)
    files += [LinkedFile(path, display(path), *names.name(path), facts[path], library=True) for path in libraries]
    project = Project(
        files, dispatch=known.dispatch, not_dispatched=known.not_dispatched, graphs=graphs or SolvedGraphs(), preview=preview,
        device_built_classes=known.device_built_classes, device_returns=known.device_returns,
    )
    add_root_entries(project, known)
    return project, mark_regions(
        project,
        known.other_platform_modules,
        known.outside_regions,
        held or {},
        outside_captures=known.outside_captures,
        unavailable_modules=known.unavailable_modules,
    )


def judge(
    targets: Sequence[Path],
    facts: Mapping[Path, FileFacts],
    root: Path,
    known: Knowledge,
    selection: Selection,
    catalog: Catalog,
    names: ModuleNames,
    display: Callable[[Path], str] = lambda path: display_path(path),
    graphs: SolvedGraphs | None = None,
    preview: bool = False,
    held: Mapping[str, str] | None = None,
    linked_files: LinkedFiles | None = None,
) -> tuple[list[Finding], int]:
    """The findings in ``targets``, with every file of ``facts`` linked (the targets and their
    context) with what ``known`` says of frameworks, and how many targets met an internal error.
    ``display``, ``graphs`` and ``linked_files`` are where a long-lived caller memoizes how each
    path is reported, the solved call graphs and the linked files; ``held`` as for ``link``."""
    project, regions = link(
        targets, facts, known, names, display=display, graphs=graphs, preview=preview, held=held, linked_files=linked_files
    )
    named = set(targets)
    indices = [index for index, linked in enumerate(project.files) if linked.path in named]
    return judge_linked(project, regions, indices, root, selection, catalog)


def judge_linked(
    project: Project, regions: Regions, targets: Iterable[int], root: Path, selection: Selection, catalog: Catalog
) -> tuple[list[Finding], int]:
    """The findings in the ``targets`` files (indices) of a linked project, and how many of them
    met an internal error."""
    findings: list[Finding] = []
    internal = 0
    for index in targets:
        linked = project.files[index]
        if linked.facts.error is not None:
            internal += linked.facts.internal
            findings.extend(selection.keep(linked, [parse_error(linked)], root))
            continue
        found = [candidate_finding(project, regions, index, c, catalog) for c in linked.facts.candidates]
        found.extend(project_findings(project, regions, index, catalog))
        findings.extend(selection.keep(linked, [f for f in found if f is not None], root))
    findings.sort(key=lambda f: (f.path, f.line, f.column, f.code))
    return findings, internal


def extract_options_of(known: Knowledge) -> ExtractOptions:
    return ExtractOptions(
        known.compile_entrypoints, known.capture_entrypoints, known.nesting_safe_entrypoints, known.replaced_entrypoints,
        known.not_selected_keys, known.eager_backends, known.capture_false_calls,
        known.capture_true_calls, known.capture_false_attributes, known.capture_none_attributes, known.capture_modes,
        tuple(known.capture_mode_calls.items()), tuple(known.capture_call_results.items()), known.empty_of_empty_calls,
        tuple(known.capture_false_tests.items()), known.capture_device_attributes,
        tuple(known.capture_mode_none_attributes.items()), tuple(known.capture_mode_true_attributes.items()),
        known.platform_raising_calls,
    )


def _with_project_context(
    targets: list[Path], root: Path, config: Config, load: Callable[[list[Path]], dict[Path, FileFacts]]
) -> dict[Path, FileFacts]:
    """Facts of ``targets`` and of the project files that can reach them: the files that import
    them, transitively (an entry point reaches a file only through a chain of imports), and
    what those files import (base classes, helpers on the way)."""
    named = {f.resolve() for f in targets}
    others = [f for f in discover([root], root, config.exclude) if f.resolve() not in named]
    modules = {path: module_name(path)[0] for path in others}
    facts = load(targets)
    needed = set(targets)
    frontier = list(targets)
    while frontier:  # importers of the frontier, found by name first, then confirmed by facts
        wanted = {module_name(path)[0] for path in frontier}
        names = b"|".join(re.escape(m.rsplit(".", 1)[-1].encode()) for m in wanted)
        pattern = re.compile(_IMPORT_NAMING % names, re.MULTILINE)
        candidates = [p for p in others if p not in needed and _mentions(p, pattern)]
        facts.update(load([p for p in candidates if p not in facts]))
        frontier = [p for p in candidates if _imported_modules(p, facts[p]) & wanted]
        needed.update(frontier)
    by_module: dict[str, list[Path]] = {}
    for path, module in modules.items():
        by_module.setdefault(module, []).append(path)
    pending = list(needed)
    while pending:  # what the importers import, transitively
        imported = {name for path in pending for name in _imported_modules(path, facts[path])}
        pending = [p for name in sorted(imported) for p in by_module.get(name, ()) if p not in needed]
        needed.update(pending)
        facts.update(load([p for p in pending if p not in facts]))
    return {path: facts[path] for path in facts if path in needed}


# An import statement naming one of ``%s``: on its first line, on a backslash continuation, or
# anywhere inside the parentheses of ``from pkg import (...)``. A loose text match (a comment or
# a string may match too); the file's facts then decide.
_IMPORT_NAMING = rb"^[ \t]*(?:from|import)[ \t](?:[^\n(\\]|\\\r?\n|\\)*(?:\([^)]*?)?\b(?:%s)\b"


def _mentions(path: Path, pattern: re.Pattern[bytes]) -> bool:
    # Only a regular file is read: opening a FIFO named ``*.py`` in the tree waits for a writer
    # for ever (the file itself is reported as not a regular file when it is checked).
    try:
        return path.is_file() and pattern.search(path.read_bytes()) is not None
    except OSError:
        return False


def _imported_modules(path: Path, facts: FileFacts) -> set[str]:
    """Every module an import of this file may name (``a.b.c`` → ``a``, ``a.b``, ``a.b.c``)."""
    module, is_package = module_name(path)
    names = set()
    for target in facts.imports.values():
        parts = absolute_name(target, module, is_package).split(".")
        names.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    return names


def cache_dir(given: Path | None, root: Path) -> Path:
    """``--cache-dir``, else ``$GRAPHLINT_CACHE_DIR``, else ``.graphlint_cache/`` at the root."""
    if given is not None:
        return given
    env = os.environ.get(CACHE_DIR_ENV)
    return Path(env) if env else root / CACHE_DIR_NAME


def display_path(path: Path) -> str:
    """Relative to the working directory when the file is under it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


