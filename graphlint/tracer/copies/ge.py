"""Count the copy-type ops of the GE graphs torchair built, per graph and per source line.

Input is the torchair stage's ``artifacts["ge_graphs"]``: ``[{"name", "ops": [{"name", "type",
"fx_node", "file", "line"}]}]``, where ``fx_node``/``file``/``line`` are what torchair's dump
lets the stage map back (None otherwise). Which aten ops become which GE copies, in torchair's
converters: ``copy_`` → Assign, functional ``copy`` and ``slice_scatter`` of a whole tensor →
Identity, ``_to_copy`` → Cast or TensorMove, ``as_strided`` → AsStrided, and the stride fix-ups
after communication into a view → ViewCopy (torchair#241).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from graphlint.tracer.locate import display_path

# The GE op types that move memory, and why torchair emits each. All are listed in a report,
# with zeros, so it says "no TensorMove" rather than nothing.
GE_COPY_TYPES: dict[str, str] = {
    "TensorMove": "a copy that gives a tensor its own memory lifetime; torchair adds one per "
    "in-place op on an input and per same-dtype _to_copy (torchair#231)",
    "Identity": "a whole-tensor copy: functional copy, or a scatter that covers the whole tensor",
    "ViewCopy": "a copy into a strided view, e.g. after a collective writes a shared buffer "
    "(torchair#241)",
    "Assign": "a result written back into a graph input (copy_)",
    "Cast": "a dtype conversion: _to_copy, or inputs of mixed dtypes promoted for one op",
    "TransData": "a conversion between NPU memory formats (ND, NZ, 5HD…)",
    "AsStrided": "a view with strides fixed at compile time, materialised by the NPU",
}

# Graph plumbing, not operators: left out of the op count that shares are taken of.
GE_STRUCTURAL_TYPES: frozenset[str] = frozenset({"Data", "RefData", "Const", "Constant", "Variable", "NetOutput"})


def count_ge_ops(ge_graphs: list[dict[str, Any]]) -> dict[str, Any]:
    """Returns ``{"ops": {type: n}, "total_ops": N, "optimized": {type: n} | None,
    "graphs": [{"name", "ops": N, "copies": {type: n}, "optimized": {type: n} | None,
    "lines": [{"file", "line", "op", "fx_node", "count"}]}]}``. ``ops`` counts the graphs as
    translated; ``optimized`` the same copy types after torchair's own graph passes, when the
    stage recorded ``optimized_types``. ``total_ops`` leaves out Data, Const and NetOutput.

    Malformed entries (a graph without ``ops``, an op without ``type``) are counted as far as
    they go and never raise: the dump comes from another process and may be partial."""
    entries = [_count_graph(i, g) for i, g in enumerate(ge_graphs) if isinstance(g, dict)]
    optimized = [e["optimized"] for e in entries if e["optimized"] is not None]
    return {
        "ops": _with_zeros(entry["copies"] for entry in entries),
        "total_ops": sum(e["ops"] for e in entries),
        "optimized": _with_zeros(optimized) if optimized else None,
        "graphs": entries,
    }


def _with_zeros(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    """Every copy type, most frequent first, zeros included."""
    total: Counter[str] = Counter(dict.fromkeys(GE_COPY_TYPES, 0))
    for count in counts:
        total.update(count)
    return dict(sorted(total.items(), key=lambda kv: (-kv[1], kv[0])))


def _count_graph(index: int, graph: dict[str, Any]) -> dict[str, Any]:
    listed = graph.get("ops")
    ops = [op for op in listed if isinstance(op, dict)] if isinstance(listed, list) else []
    copies: Counter[str] = Counter()
    lines: Counter[tuple[Any, Any, str, Any]] = Counter()
    operators = 0
    for op in ops:
        op_type = _text(op.get("type"))
        if op_type not in GE_STRUCTURAL_TYPES:
            operators += 1
        if op_type not in GE_COPY_TYPES:
            continue
        copies[op_type] += 1
        file = _text(op.get("file"))
        lines[(file and display_path(file), _line(op.get("line")), op_type, _text(op.get("fx_node")))] += 1
    optimized = graph.get("optimized_types")
    return {
        "name": str(graph.get("name") or f"ge_graph_{index}"),
        "ops": operators,
        "copies": dict(copies.most_common()),
        "optimized": (
            {t: n for t, n in optimized.items() if t in GE_COPY_TYPES and isinstance(n, int)}
            if isinstance(optimized, dict) else None
        ),
        "lines": [
            {"file": file, "line": line, "op": op_type, "fx_node": fx_node, "count": count}
            for (file, line, op_type, fx_node), count in sorted(
                lines.items(), key=lambda kv: (-kv[1], kv[0][0] or "", kv[0][1] or 0, kv[0][2])
            )
        ],
    }


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _line(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
