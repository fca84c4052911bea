"""The design's ``copies`` object, from the aten counts and (where torchair ran) the GE counts.

Data first: the text, HTML and baseline writers only read this dict. Shape::

    {"aten": {op: n}, "ge": {type: n} | None,
     "ge_optimized": {type: n} | None (after torchair's own GE passes),
     "by_line": [{"level", "file", "line", "op", "count", "group"? (aten), "bytes"? (aten),
                  "fx_nodes"? (GE), "graphs"}],
     "totals": {"aten": {"ops", "copies", "share", "bytes"}, "ge": {"ops", "copies", "share"} | None},
     "groups": [{"group", "count", "why"}],
     "graphs": [{"level", "name", "kind", "ops", "copies", "share", "optimized"? (GE),
                 "rows": [{"op", "group"? (aten), "why", "count", "bytes"? (aten), "share",
                           "top_lines", "other_lines" (how many lines top_lines leaves out)}]}],
     "suggestions": [finding JSON of the trace report, with hint and refs]}
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from typing import Any

from graphlint.tracer.copies.aten import GROUPS, add_bytes
from graphlint.tracer.copies.ge import GE_COPY_TYPES
from graphlint.tracer.copies.suggest import suggestions

TOP_LINES = 3  # lines shown per row of a graph


def build_copies_report(
    aten: dict[str, Any] | None, ge: dict[str, Any] | None, lang: str = "en"
) -> dict[str, Any]:
    """``aten`` is ``count_aten_copies(...)`` (None when the aot stage did not run), ``ge`` is
    ``count_ge_ops(...)`` (None when torchair did not run); hints are in ``lang``."""
    graphs = [_graph_entry("aten", g) for g in (aten or {}).get("graphs", [])]
    graphs += [_graph_entry("ge", g) for g in (ge or {}).get("graphs", [])]
    return {
        "aten": dict(aten["ops"]) if aten is not None else None,
        "ge": dict(ge["ops"]) if ge is not None else None,
        "ge_optimized": ge.get("optimized") if ge is not None else None,
        "by_line": _by_line(graphs),
        "totals": {"aten": _totals(aten, with_bytes=True), "ge": _totals(ge, with_bytes=False)},
        "groups": [
            {"group": group, "count": count, "why": GROUPS.get(group, "")}
            for group, count in (aten or {}).get("groups", {}).items()
        ],
        "graphs": [{k: v for k, v in g.items() if k != "lines"} for g in graphs],
        "suggestions": suggestions(aten, ge, lang),
    }


def share(count: int, total: int) -> float:
    return round(count / total, 4) if total else 0.0


def _totals(counts: dict[str, Any] | None, with_bytes: bool) -> dict[str, Any] | None:
    """Ops, copies and share of a level, and the bytes its copies write where they are known."""
    if counts is None:
        return None
    copies = sum(counts["ops"].values())
    totals = {"ops": counts["total_ops"], "copies": copies, "share": share(copies, counts["total_ops"])}
    if with_bytes:
        lines = [line for graph in counts["graphs"] for line in graph["lines"]]
        totals["bytes"] = functools.reduce(add_bytes, (line.get("bytes") for line in lines), 0)
    return totals


def _graph_entry(level: str, graph: dict[str, Any]) -> dict[str, Any]:
    """One graph with a row per (op, group): its count, share of the graph's ops, top lines."""
    rows: dict[tuple[str, str | None], dict[str, Any]] = {}
    for line in graph["lines"]:
        key = (line["op"], line.get("group"))
        why = GROUPS.get(key[1] or "") if level == "aten" else GE_COPY_TYPES.get(key[0], "")
        row = rows.setdefault(key, {"op": key[0], "group": key[1], "why": why, "count": 0, "top_lines": []})
        row["count"] += line["count"]
        if level == "aten":
            row["bytes"] = add_bytes(row.get("bytes", 0), line.get("bytes"))
        row["top_lines"].append({"file": line["file"], "line": line["line"], "count": line["count"]})
    for row in rows.values():
        row["share"] = share(row["count"], graph["ops"])
        row["other_lines"] = max(0, len(row["top_lines"]) - TOP_LINES)
        row["top_lines"] = sorted(row["top_lines"], key=lambda ln: -ln["count"])[:TOP_LINES]
        if row["group"] is None:
            del row["group"]
    copies = sum(graph["copies"].values())
    entry = {
        "level": level,
        "name": graph["name"],
        "kind": graph.get("kind", "ge"),
        "ops": graph["ops"],
        "copies": graph["copies"],
        "share": share(copies, graph["ops"]),
        "rows": sorted(rows.values(), key=lambda r: (-r["count"], r["op"])),
        "lines": graph["lines"],
    }
    if graph.get("optimized") is not None:
        entry["optimized"] = graph["optimized"]
    return entry


def _by_line(graphs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every copy's source line, summed over graphs (a line's forward and backward copies add)."""
    counts: Counter[tuple[Any, ...]] = Counter()
    written: dict[tuple[Any, ...], int | None] = {}
    in_graphs: dict[tuple[Any, ...], list[str]] = defaultdict(list)
    fx_nodes: dict[tuple[Any, ...], list[str]] = defaultdict(list)  # GE ops: the FX nodes they came from
    for graph in graphs:
        for line in graph["lines"]:
            key = (graph["level"], line["file"], line["line"], line["op"], line.get("group"))
            counts[key] += line["count"]
            if "bytes" in line:
                written[key] = add_bytes(written.get(key, 0), line["bytes"])
            if line.get("fx_node"):
                fx_nodes[key].append(line["fx_node"])
            in_graphs[key].append(graph["name"])
    entries = []
    for key, count in sorted(counts.items(), key=_by_line_order):
        level, file, line, op, group = key
        entry = {"level": level, "file": file, "line": line, "op": op, "count": count}
        if group is not None:
            entry["group"] = group
        if key in written:
            entry["bytes"] = written[key]
        if key in fx_nodes:
            entry["fx_nodes"] = fx_nodes[key]
        entry["graphs"] = in_graphs[key]
        entries.append(entry)
    return entries


def _by_line_order(item: tuple[tuple[Any, ...], int]) -> tuple[Any, ...]:
    """aten before ge; within a level the most copies first, then by file and line."""
    (level, file, line, op, _group), count = item
    return (level, -count, file or "", line or 0, op)
