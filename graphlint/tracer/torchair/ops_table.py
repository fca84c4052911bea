"""The op support table of ``graphlint ops``: torchair's ``fx_summary`` columns, without an NPU.

Per target: every op of its functionalized forward graphs with its type (aten / prims /
builtin / other namespace), torchair's converter status, how often it is called, the input and
output shapes seen, and the user lines that call it. Without a target: the whole registry.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

import torch

from graphlint.tracer.locate import display_path, user_line_of_stack_trace
from graphlint.tracer.recording import RecordedGraph
from graphlint.tracer.torchair.registry import Registry, op_name
from graphlint.tracer.torchair.runner import is_cpu_only_op

TARGET_COLUMNS = ("op", "type", "status", "count", "inputs", "outputs", "lines")
REGISTRY_COLUMNS = ("op", "status", "converter")
UNSUPPORTED = {"not implemented", "partly", "missing"}


def target_rows(registry: Registry, graphs: Sequence[RecordedGraph], user_files: set[str]) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for graph in graphs:
        for node in graph.module.graph.nodes:
            if node.op != "call_function":
                continue
            name = op_name(node.target)
            row = rows.setdefault(
                name,
                {"op": name, "type": _op_type(name), "status": _status(registry, name), "count": 0,
                 "inputs": {}, "outputs": {}, "lines": []},
            )
            row["count"] += 1
            _tally(row["inputs"], ", ".join(_describe(a) for a in node.args))
            _tally(row["outputs"], _describe(node))
            where = user_line_of_stack_trace(node.meta.get("stack_trace"), user_files)
            line = f"{display_path(where[0])}:{where[1]}" if where else None
            if line and line not in row["lines"]:
                row["lines"].append(line)
    return sorted(rows.values(), key=lambda r: (r["status"] not in UNSUPPORTED, r["op"]))


def render(rows: list[dict[str, Any]], columns: Sequence[str], fmt: str) -> str:
    if fmt == "json":
        return json.dumps({"version": 1, "ops": rows}, indent=2, ensure_ascii=False)
    flat = [{c: _cell(row.get(c)) for c in columns} for row in rows]
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(columns), lineterminator="\n")
        writer.writeheader()
        writer.writerows(flat)
        return out.getvalue()
    widths = {c: min(60, max([len(c), *(len(r[c]) for r in flat)])) for c in columns}
    lines = ["  ".join(c.ljust(widths[c]) for c in columns)]
    lines += ["  ".join(r[c][: widths[c]].ljust(widths[c]) for c in columns) for r in flat]
    return "\n".join(lines) + "\n"


def _status(registry: Registry, name: str) -> str:
    status = registry.status_of(name)
    if status in UNSUPPORTED and is_cpu_only_op(name):
        return "inconclusive (CPU-only op)"
    return status


def _op_type(name: str) -> str:
    namespace = name.split(".", 1)[0]
    if namespace in ("operator", "math", "torch"):
        return "builtin"
    return namespace


def _describe(value: Any) -> str:
    """An argument as the table shows it: a node by its fake value's dtype and shape
    (``float32(4, 8)``), lists element-wise, constants as written."""
    if isinstance(value, torch.fx.Node):
        fake = value.meta.get("val")
        return value.name if fake is None else _describe(fake)
    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')}{tuple(value.shape)}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_describe(v) for v in value) + "]"
    return repr(value)


def _tally(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):
        return "; ".join(f"{n}x {k}" for k, n in sorted(value.items(), key=lambda kv: -kv[1]))
    if isinstance(value, list):
        return " ".join(value)
    return str(value)
