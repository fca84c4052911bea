"""The static check, end to end: paths → files → facts → project → regions → findings.

Everything users configure is applied here, once: which rules are selected (``--select`` /
``--ignore`` / ``[tool.graphlint]``, by code prefix), per-file ignores, and ``# graphlint:
ignore[...]`` comments. Rules only ever produce candidates.

When the paths name single files (pre-commit passes just the changed ones), the facts of the
whole project (the nearest ``pyproject.toml`` or ``.git``) are linked too, from the cache where
possible, so that a helper compiled through a model in another file is still seen; findings are
reported for the named files only.
"""

from __future__ import annotations

import fnmatch
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphlint.checks.cache import CACHE_DIR_ENV, CACHE_DIR_NAME, FactsCache
from graphlint.checks.collect import collect_facts
from graphlint.checks.discover import discover
from graphlint.checks.extract import ExtractOptions
from graphlint.checks.facts import Candidate, FileFacts
from graphlint.checks.link import FunctionKey, LinkedFile, Project, module_name
from graphlint.checks.regions import EntryId, RegionHit, Regions, mark_regions
from graphlint.checks.rules import all_rules
from graphlint.checks.rules.base import Rule
from graphlint.config import Config, find_project_root, load_config

PARSE_ERROR = "GL000"
PARSE_ERROR_SLUG = "parse-error"


@dataclass
class CheckOptions:
    paths: list[Path]
    select: tuple[str, ...] = ()  # added to the config's
    ignore: tuple[str, ...] = ()
    jobs: int = 0  # 0: all cores
    use_cache: bool = True
    cache_dir: Path | None = None


@dataclass
class Finding:
    code: str
    slug: str
    severity: str
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    region: RegionHit | None
    fixable: bool
    # Not in the JSON: what fixes need to find the node again.
    file: Path = field(repr=False, default=Path())
    anchor: tuple[str, int] | None = field(repr=False, default=None)
    fix: str | None = field(repr=False, default=None)

    def to_json(self) -> dict[str, Any]:
        region = None
        if self.region is not None:
            region = {"kind": self.region.kind, "entry": self.region.entry_label, "chain": list(self.region.chain)}
        return {
            "code": self.code,
            "slug": self.slug,
            "severity": self.severity,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "message": self.message,
            "region": region,
            "fixable": self.fixable,
        }


@dataclass
class CheckResult:
    findings: list[Finding]
    files: int
    seconds: float
    internal_errors: int = 0
    root: Path = Path()


def run_check(options: CheckOptions) -> CheckResult:
    """Raises ``ConfigError`` for a malformed ``[tool.graphlint]``."""
    started = time.perf_counter()
    paths = options.paths or [Path(".")]
    root = find_project_root(paths[0])
    config = load_config(root)
    targets = discover(paths, root, config.exclude)
    files = list(targets)
    if any(not p.is_dir() for p in paths):
        named = {f.resolve() for f in targets}
        files.extend(f for f in discover([root], root, config.exclude) if f.resolve() not in named)
    extract_options = ExtractOptions(config.compile_entrypoints, config.capture_entrypoints)
    cache = FactsCache(_cache_dir(options, root), extract_options) if options.use_cache else None
    jobs = options.jobs or os.cpu_count() or 1
    facts = collect_facts(files, extract_options, cache, jobs)
    project = Project([_linked(path, facts[path]) for path in files])
    regions = mark_regions(project)
    selection = _Selection(config, options)
    findings: list[Finding] = []
    internal = 0
    for index in range(len(targets)):
        linked = project.files[index]
        if linked.facts.error is not None:
            internal += linked.facts.internal
            findings.extend(selection.keep(linked, [_parse_error(linked)], root))
            continue
        found = [_finding(project, regions, index, c) for c in linked.facts.candidates]
        findings.extend(selection.keep(linked, [f for f in found if f is not None], root))
    findings.sort(key=lambda f: (f.path, f.line, f.column, f.code))
    return CheckResult(findings, len(targets), time.perf_counter() - started, internal, root)


def _cache_dir(options: CheckOptions, root: Path) -> Path:
    if options.cache_dir is not None:
        return options.cache_dir
    env = os.environ.get(CACHE_DIR_ENV)
    return Path(env) if env else root / CACHE_DIR_NAME


def _linked(path: Path, facts: FileFacts) -> LinkedFile:
    module, is_package = module_name(path)
    return LinkedFile(path=path, display=display_path(path), module=module, is_package=is_package, facts=facts)


def display_path(path: Path) -> str:
    """Relative to the working directory when the file is under it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


_RULES: dict[str, Rule] = {}


def _rule(code: str) -> Rule:
    if not _RULES:
        _RULES.update({r.code: r for r in all_rules()})
    return _RULES[code]


def _finding(project: Project, regions: Regions, file: int, candidate: Candidate) -> Finding | None:
    rule = _rule(candidate.code)
    region = _region(project, regions, file, candidate, rule)
    if region is None and not candidate.anywhere:
        return None
    linked = project.files[file]
    return Finding(
        code=rule.code,
        slug=rule.slug,
        severity=rule.severity(region.kind if region else None),
        path=linked.display,
        line=candidate.line,
        column=candidate.column,
        end_line=candidate.end_line,
        end_column=candidate.end_column,
        message=candidate.message,
        region=region,
        fixable=candidate.fix is not None,
        file=linked.path,
        anchor=candidate.anchor,
        fix=candidate.fix,
    )


def _region(project: Project, regions: Regions, file: int, candidate: Candidate, rule: Rule) -> RegionHit | None:
    """The region that makes ``candidate`` a finding: capture before compiled, then the
    shortest chain; None when its code never runs in a region the rule cares about."""
    if candidate.own_entry is not None:
        # Nested compile: the entry's own targets, reached from *another* traced entry.
        own = EntryId(file, candidate.own_entry)
        hits = [
            hit
            for ref in regions.entries[own].targets
            for key in project.resolve(file, ref)
            for hit in regions.hits(key)
            if hit.entry != own and hit.traced and len(hit.chain) > 1
        ]
    else:
        hits = list(regions.hits(FunctionKey(file, candidate.scope)))
        if candidate.block is not None:
            hits.append(regions.by_block[EntryId(file, candidate.block)])
    usable = [
        hit
        for hit in hits
        if hit.kind in rule.regions or candidate.anywhere
        if not (rule.traced_only and not hit.traced)
        if not (candidate.eager and hit.traced)
        if not (candidate.entry_scope_only and (len(hit.chain) != 1 or hit.dynamic is False))
    ]
    if not usable:
        return None
    return min(usable, key=lambda h: (h.kind != "capture", len(h.chain), h.entry_label))


def _parse_error(linked: LinkedFile) -> Finding:
    facts = linked.facts
    return Finding(
        code=PARSE_ERROR,
        slug=PARSE_ERROR_SLUG,
        severity="error",
        path=linked.display,
        line=facts.error_line,
        column=facts.error_column,
        end_line=facts.error_line,
        end_column=facts.error_column,
        message=facts.error or "",
        region=None,
        fixable=False,
        file=linked.path,
    )


class _Selection:
    """--select/--ignore and [tool.graphlint] select/ignore/per-file-ignores, and
    ``# graphlint: ignore[...]`` comments; all by code prefix."""

    def __init__(self, config: Config, options: CheckOptions) -> None:
        self.select = tuple(code.upper() for code in (*config.select, *options.select))
        self.ignore = tuple(code.upper() for code in (*config.ignore, *options.ignore))
        self.per_file = config.per_file_ignores

    def keep(self, linked: LinkedFile, findings: list[Finding], root: Path) -> list[Finding]:
        ignored_here = self._per_file(linked.path, root)
        suppressions = linked.facts.suppressions
        kept = []
        for finding in findings:
            code = finding.code
            if self.select and not code.startswith(self.select) and code != PARSE_ERROR:
                continue
            if code.startswith(self.ignore) or code.startswith(ignored_here):
                continue
            codes = suppressions.get(finding.line)
            if codes is not None and (not codes or code.startswith(tuple(codes))):
                continue
            kept.append(finding)
        return kept

    def _per_file(self, path: Path, root: Path) -> tuple[str, ...]:
        if not self.per_file:
            return ()
        try:
            relative = path.resolve().relative_to(root).as_posix()
        except ValueError:
            relative = path.as_posix()
        return tuple(
            code.upper()
            for pattern, codes in self.per_file.items()
            if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(path.name, pattern)
            for code in codes
        )
