"""Compare the ranks of a job: what they run with (versions, environment), what they compiled
(graphs, graph breaks, recompiles and their guards) and the ordered collectives in their graphs.
Each difference is one ``distributed`` finding naming the deviating ranks and, where there is
one, the user's line of the first point where they differ."""

from __future__ import annotations

from typing import Any

from graphlint.tracer.classify.codes import trace_code
from graphlint.tracer.distributed.views import RankView, deviating_ranks, rank_list
from graphlint.tracer.findings import Finding, Severity

COMPARED_STAGES = ("dynamo", "aot")  # the stages that record graphs
GRAPH_COUNTS = ("graphs", "graph_breaks", "recompiles")
# Findings that make ranks' graphs differ: where the first difference is shown.
GRAPH_FINDING_KINDS = ("graph-break", "recompile", "recompile-limit", "compile-error")


def divergence_findings(views: list[RankView]) -> list[Finding]:
    """In the order a reader should look at them: collectives, graphs, versions, environment."""
    reported = [v for v in views if v.report is not None]
    if len(reported) < 2:
        return []
    found = [
        _first_stage_with(reported, _collective_difference),
        _first_stage_with(reported, _graph_difference),
        _facts_difference(reported, "versions", "version-mismatch", "error", "run different versions"),
        _facts_difference(reported, "env", "env-mismatch", "warning", "run with different environment variables"),
    ]
    return [f for f in found if f is not None]


def _finding(kind: str, stage: str, message: str, ranks: list[int], severity: Severity = "error",
             file: str | None = None, line: int | None = None, **details: Any) -> Finding:
    return Finding(
        layer="distributed", stage=stage, kind=kind, message=message, code=trace_code(kind), file=file, line=line,
        severity=severity, details={"ranks": ranks, **details},
    )


def _first_stage_with(views: list[RankView], compare: Any) -> Finding | None:
    """The difference of the first compared stage that has one (later stages inherit it)."""
    for stage in COMPARED_STAGES:
        finding = compare(views, stage)
        if finding is not None:
            return finding
    return None


def _collective_difference(views: list[RankView], stage: str) -> Finding | None:
    sequences = {v.rank: v.collectives(stage) for v in views}
    if any(s is None for s in sequences.values()):
        return None  # the stage did not run (or record) on every rank: nothing to line up
    keyed = {
        r: [(c["graph"], c["op"], tuple(c["args"])) for c in s] for r, s in sequences.items()  # type: ignore[union-attr]
    }
    if len({repr(k) for k in keyed.values()}) == 1:
        return None
    index = next(
        i for i in range(max(len(k) for k in keyed.values()))
        if len({repr(k[i]) if i < len(k) else "end" for k in keyed.values()}) > 1
    )
    at_index = {r: (s[index] if index < len(s) else None) for r, s in sequences.items()}  # type: ignore[arg-type]
    deviants = deviating_ranks({r: keyed[r][index] if index < len(keyed[r]) else None for r in keyed})
    described = "; ".join(f"rank {r}: {_describe_collective(c)}" for r, c in sorted(at_index.items()))
    same_ops = len({repr([(op, args) for _, op, args in k]) for k in keyed.values()}) == 1
    why = (
        "the same collectives in the same order, split across different graphs: a backend that orders "
        "or fuses collectives within a graph (torchair/GE, inductor) issues them differently per rank"
        if same_ops else "ranks that issue different collectives wait on each other forever"
    )
    located = next((at_index[r] for r in deviants if at_index[r] and at_index[r]["file"]), None) or next(
        (c for c in at_index.values() if c and c["file"]), None
    )
    return _finding(
        "collective-mismatch", stage,
        f"the {stage} graphs of the ranks issue different collectives; first difference at collective "
        f"#{index + 1}: {described} ({why})",
        deviants, file=located["file"] if located else None, line=located["line"] if located else None,
        collectives={str(r): s for r, s in sequences.items()},
    )


def _describe_collective(collective: dict[str, Any] | None) -> str:
    if collective is None:
        return "no collective"
    where = f" at {collective['file']}:{collective['line']}" if collective["file"] else ""
    return f"{collective['op']}({', '.join(collective['args'])}) in {collective['graph']}{where}"


def _graph_difference(views: list[RankView], stage: str) -> Finding | None:
    rows = {v.rank: v.stage_row(stage) for v in views}
    if any(row is None or row["status"] == "skipped" for row in rows.values()):
        return None
    counts = {r: tuple(row.get(k, 0) for k in GRAPH_COUNTS) for r, row in rows.items()}  # type: ignore[union-attr]
    guards = {v.rank: _failing_guards(v, stage) for v in views}
    if len(set(counts.values())) == 1 and len(set(guards.values())) == 1:
        return None
    deviants = deviating_ranks({r: (counts[r], guards[r]) for r in counts})
    table = "; ".join(
        f"rank {r}: " + ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in zip(GRAPH_COUNTS, c))
        for r, c in sorted(counts.items())
    )
    first = _first_unshared_graph_finding(views, stage)
    if first is None:
        message = f"the ranks compile different graphs in the {stage} stage ({table})"
        return _finding("graph-divergence", stage, message, deviants)
    finding, ranks = first
    guard = finding.get("details", {}).get("guard")
    return _finding(
        "graph-divergence", stage,
        f"the ranks compile different graphs in the {stage} stage ({table}); first difference: "
        f"{finding['kind']} {finding.get('code') or ''} at {finding['file']}:{finding['line']} on {rank_list(ranks)} "
        f"only: {finding['message'].splitlines()[0]}" + (f" (guard: {guard})" if guard else ""),
        ranks, file=finding["file"], line=finding["line"],
    )


def _first_unshared_graph_finding(views: list[RankView], stage: str) -> tuple[dict[str, Any], list[int]] | None:
    """The first graph break, recompile (with its failing guard) or compile error, in rank
    order then report order, that not every rank has; and the ranks that have it."""
    def key(f: dict[str, Any]) -> tuple[Any, ...]:
        return (f["kind"], f.get("code"), f.get("file"), f.get("line"), f.get("details", {}).get("guard"))

    per_rank = {v.rank: _graph_findings(v, stage) for v in views}
    for rank in sorted(per_rank):
        for finding in per_rank[rank]:
            having = sorted(r for r, fs in per_rank.items() if key(finding) in {key(f) for f in fs})
            if len(having) < len(per_rank):
                return finding, having
    return None


def _graph_findings(view: RankView, stage: str) -> list[dict[str, Any]]:
    return [f for f in view.findings if f["stage"] == stage and f["kind"] in GRAPH_FINDING_KINDS]


def _failing_guards(view: RankView, stage: str) -> tuple[str, ...]:
    """The guards whose failure made the rank recompile: ranks that agree on counts can still
    disagree on them."""
    guards = (f.get("details", {}).get("guard") for f in _graph_findings(view, stage))
    return tuple(sorted(str(g) for g in guards if g))


def _facts_difference(views: list[RankView], section: str, kind: str, severity: Severity, what: str) -> Finding | None:
    values = {v.rank: v.facts.get(section) or {} for v in views}
    names = sorted({name for facts in values.values() for name in facts})
    differing = {}
    for name in names:
        per_rank = {r: facts.get(name) for r, facts in values.items()}
        if len({repr(v) for v in per_rank.values()}) > 1:
            differing[name] = per_rank
    if not differing:
        return None
    ranks = sorted({r for per_rank in differing.values() for r in deviating_ranks(per_rank)})
    parts = [f"{name}: {_values_by_rank(per_rank)}" for name, per_rank in differing.items()]
    return _finding(
        kind, "environment", f"the ranks {what}: " + "; ".join(parts),
        ranks, severity=severity, values={n: {str(r): v for r, v in pr.items()} for n, pr in differing.items()},
    )


def _values_by_rank(per_rank: dict[int, Any]) -> str:
    """``2.13.0 on ranks 0, 2, 3, 2.12.1 on rank 1`` (``unset`` for a missing value)."""
    groups: dict[str, list[int]] = {}
    for rank, value in sorted(per_rank.items()):
        groups.setdefault("unset" if value is None else str(value), []).append(rank)
    return ", ".join(f"{value} on {rank_list(ranks)}" for value, ranks in groups.items())
