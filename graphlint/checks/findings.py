"""From the rules' candidates to findings: the region that makes a candidate count (capture
before compiled, then the shortest chain), the severity it takes there, and GL000 for a file that
could not be read. Rules only ever produce candidates; this is where they meet the regions."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphlint.checks import apis
from graphlint.checks.catalog import Catalog, RuleInfo
from graphlint.checks.device_returns import returns_on_arguments
from graphlint.checks.facts import Candidate
from graphlint.checks.link import LinkedFile, Project
from graphlint.checks.module_state_parameters import receives_module_state
from graphlint.checks.parameter_constants import live_entry_functions
from graphlint.checks.mode_flow import meet
from graphlint.checks.regions import EntryId, RegionHit, Regions
from graphlint.checks.value_graph import FunctionKey

if TYPE_CHECKING:
    from graphlint.checks.rules.base import Rule

PARSE_ERROR = "GL000"
PARSE_ERROR_SLUG = "parse-error"


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
    file: Path = field(repr=False)
    anchor: tuple[str, int] | None = field(repr=False)
    fix: str | None = field(repr=False)
    predicts: list[str] = field(default_factory=list)  # in the JSON: the GB codes dynamo gives it

    def to_json(self) -> dict[str, Any]:
        region = None
        if self.region is not None:
            region = {
                "kind": self.region.kind,
                "entry": self.region.entry_label,
                "chain": list(self.region.chain),
                "steps": [{"function": s.function, "path": s.path, "line": s.line} for s in self.region.steps],
            }
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
            "predicts": self.predicts,
        }


def candidate_finding(project: Project, regions: Regions, file: int, candidate: Candidate, catalog: Catalog) -> Finding | None:
    rule = catalog[candidate.code]
    region = _region(project, regions, file, candidate, rule)
    if region is None and not candidate.anywhere:
        return None
    # Asked only now: with no region anywhere (the standard library has no entry point), the
    # value flow is never solved at all.
    if candidate.host_receiver and (file, candidate.anchor[1]) in project.graph.host_receivers:
        return None  # .cpu() / .tolist() of what the value flow shows is a host tensor
    if candidate.inherited_state is not None and project.inherits_module_state(file, *candidate.inherited_state):
        return None  # a buffer, parameter or submodule a base class keeps: on the model's device
    if candidate.built_state is not None and project.built_on_device(file, *candidate.built_state):
        return None  # made on the target device while the framework's loader built the model
    if candidate.receiver_parameter is not None and receives_module_state(
        project, FunctionKey(file, candidate.scope), candidate.receiver_parameter
    ):
        return None  # every call hands the moved parameter module state: on the model's device
    if candidate.device_calls is not None and any(
        all(returns_on_arguments(project, file, *call) for call in way) for way in candidate.device_calls
    ):
        return None  # what the calls return is made on the device of the arguments the move is to
    span = (candidate.line, candidate.column, candidate.end_line, candidate.end_column)
    return _rule_finding(
        rule, project.files[file], span, candidate.message, region, candidate.anchor, candidate.fix, candidate.predicts
    )


def _rule_finding(
    rule: RuleInfo | Rule,  # what is known of the rule, or the rule itself (project rules)
    linked: LinkedFile,
    span: tuple[int, int, int, int],
    message: str,
    region: RegionHit | None,
    anchor: tuple[str, int] | None = None,
    fix: str | None = None,
    predicts: list[str] | None = None,
) -> Finding:
    line, column, end_line, end_column = span
    return Finding(
        code=rule.code,
        slug=rule.slug,
        severity=rule.severity(region.kind if region else None, fullgraph=bool(region and region.fullgraph)),
        path=linked.display,
        line=line,
        column=column,
        end_line=end_line,
        end_column=end_column,
        message=message,
        region=region,
        fixable=fix is not None,
        predicts=predicts or list(rule.predicts),
        file=linked.path,
        anchor=anchor,
        fix=fix,
    )


def project_findings(project: Project, regions: Regions, file: int, catalog: Catalog) -> list[Finding]:
    """What the rules that judge the linked project itself (``ProjectRule``) say about ``file``."""
    linked = project.files[file]
    return [
        _rule_finding(rule, linked, (site.line, site.column, site.line, site.column), site.message, site.region)
        for rule in catalog.project_rules()
        for site in rule.judge(project, regions, file)
    ]


def _region(project: Project, regions: Regions, file: int, candidate: Candidate, rule: RuleInfo) -> RegionHit | None:
    """The region that makes ``candidate`` a finding: capture before compiled, then the
    shortest chain; None when its code never runs in a region the rule cares about."""
    if candidate.own_entry is not None:
        # Nested compile: the entry's own targets, run by *another* entry's eager capture inside
        # the captured code (not as what it captures) and before any compiled function on the
        # way. Where dynamo traces, it inlines the inner function and ignores its decorator
        # (rules/nested_compile.py says how that was measured).
        # A compiled model (its ``forward``) the capture runs is compile-then-capture, not this,
        # however many of the capture's own functions call it; a compiled module run inside
        # another module's eager ``forward`` (a layer compiled on its own) is nested.
        # ``g = torch.compile(f)`` compiles ``g`` only: where its calls are followed, the capture
        # nests it by calling ``g``, not by calling ``f`` (``compile_wrappers.py``).
        own = EntryId(file, candidate.own_entry)
        reached = (
            regions.wrapper_hits.get(own, [])
            if own in regions.wrapped
            else [(function, hit) for function in live_entry_functions(project, file, candidate.own_entry) for hit in regions.hits(function)]
        )
        hits = [
            hit
            for function, hit in reached
            if hit.entry != own and not hit.traced and not hit.through_compile
            if (
                hit.through_module
                if function.qualname.rsplit(".", 1)[-1] in apis.INSTANCE_CALL_METHODS
                else len(hit.chain) > (1 if regions.entries[hit.entry].targets else 2)  # a block's chain starts at the block
            )
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
        if not (hit.kind == "capture" and _never_captured(project, regions, file, candidate, hit))
        if not (candidate.entry_scope_only and (len(hit.chain) != 1 or hit.dynamic is False))
    ]
    if not usable:
        return None
    return min(usable, key=lambda h: (h.kind != "capture", len(h.chain), h.entry_label))


def _never_captured(project: Project, regions: Regions, file: int, candidate: Candidate, hit: RegionHit) -> bool:
    """Whether no capture mode the hit's entry runs the site's function in reaches the site
    (``mode_flow.py``); a capture block's own sites run in every mode."""
    if candidate.uncaptured:
        return True
    flow = regions.mode_flow
    if flow is None:
        return False
    in_block = hit is regions.by_block.get(hit.entry)
    entered = None if in_block else regions.entered_modes(hit.entry, FunctionKey(file, candidate.scope))
    reached = meet(entered, flow.candidate(file, candidate))
    return reached is not None and not reached


def parse_error(linked: LinkedFile) -> Finding:
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
        anchor=None,
        fix=None,
    )


