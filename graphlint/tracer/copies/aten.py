"""Count the memory-moving aten ops in the functionalized AOT graphs, per graph and per line.

After functionalization every in-place op and every view write is spelled out as copies:
an in-place op on a graph input becomes a ``copy_`` back into the input at the end of the graph,
an in-place op on a view becomes a ``*_scatter`` that rebuilds the base, ``.contiguous()`` of a
transpose becomes ``clone(memory_format=contiguous)``, ``.to(dtype)`` becomes ``_to_copy``.
Those are the copies torchair turns into TensorMove / ViewCopy / Assign / Cast (torchair#231).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from graphlint.tracer.locate import display_path, user_line_of_stack_trace

if TYPE_CHECKING:
    import torch.fx

    from graphlint.tracer.recording import RecordedGraph

# Why each group of copies exists, in one line; the report prints these beside the counts.
GROUPS: dict[str, str] = {
    "input-mutation": "in-place op on a graph input: the new value is copied back into the input "
    "at the end of the graph",
    "view-mutation": "in-place op on a view: the whole base tensor is rebuilt with a scatter",
    "indexed-write": "indexed write (x[i] = v, index_put_): becomes index_put, a copy of the whole tensor",
    "layout": "layout change: a non-contiguous view (transpose, permute, slice) made contiguous",
    "strided-view": "as_strided: a view whose strides are fixed in the graph; on NPU it is copied "
    "into that layout",
    "dtype-device": "dtype/device move: .to(), .float(), .half(), .cpu() and friends",
    "explicit": "explicit copy in the code: .clone(), or copy_() into a tensor made in the graph",
    "constant": "a tensor constant copied into the graph (torch.tensor(...) or a scalar written "
    "into a tensor)",
}

# aten op (overload packet name) → its group; ``copy_`` and ``clone`` are refined per node.
COPY_OPS: dict[str, str] = {
    "copy_": "explicit",
    "copy": "explicit",
    "clone": "explicit",
    "contiguous": "layout",
    "_to_copy": "dtype-device",
    "as_strided": "strided-view",
    "as_strided_scatter": "view-mutation",
    "slice_scatter": "view-mutation",
    "select_scatter": "view-mutation",
    "diagonal_scatter": "view-mutation",
    "index_put": "indexed-write",
    "lift_fresh_copy": "constant",
}


def aten_op_name(node: torch.fx.Node) -> str | None:
    """``clone`` for ``aten.clone.default``; None for anything that is not an aten op call."""
    if node.op != "call_function":
        return None
    packet = getattr(node.target, "overloadpacket", None)
    if packet is None or getattr(node.target, "namespace", None) != "aten":
        return None
    return packet.__name__


def copy_group(node: torch.fx.Node) -> str | None:
    """The group of a copy node (a key of ``GROUPS``), or None when the node copies nothing."""
    op = aten_op_name(node)
    if op not in COPY_OPS:
        return None
    if op == "copy_" and node.args and getattr(node.args[0], "op", None) == "placeholder":
        return "input-mutation"
    if op == "clone" and node.kwargs.get("memory_format") is not None:
        return "layout"  # how decompositions spell .contiguous() and reshape of a strided view
    return COPY_OPS[op]


def count_aten_copies(graphs: list[RecordedGraph], user_files: set[str]) -> dict[str, Any]:
    """Copies in the AOT graphs (``kind`` forward/backward; dynamo graphs are not functionalized
    and are ignored). Returns::

        {"ops": {op: n}, "total_ops": N, "groups": {group: n},
         "graphs": [{"name", "kind", "ops": N, "copies": {op: n},
                     "lines": [{"file", "line", "op", "group", "count", "bytes"}]}],
         "mixed_dtype_cats": [{"graph", "file", "line", "dtypes": [...]}]}

    ``total_ops`` counts every aten call (views included), so ``copies / total_ops`` is the
    share of the graph's ops that move memory. ``bytes`` is what the copies of a line write
    (None under symbolic shapes): a scatter writes its whole base, a clone only its input."""
    entries, cats = [], []
    ops: Counter[str] = Counter()
    groups: Counter[str] = Counter()
    for graph in graphs:
        if graph.kind == "dynamo":
            continue
        entry, graph_cats = _count_graph(graph, user_files)
        entries.append(entry)
        cats += graph_cats
        ops.update(entry["copies"])
        for line in entry["lines"]:
            groups[line["group"]] += line["count"]
    return {
        "ops": dict(ops.most_common()),
        "total_ops": sum(e["ops"] for e in entries),
        "groups": dict(groups.most_common()),
        "graphs": entries,
        "mixed_dtype_cats": cats,
    }


def _count_graph(graph: RecordedGraph, user_files: set[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The graph's entry, and its concats of mixed dtypes."""
    total = 0
    copies: Counter[str] = Counter()
    lines: Counter[tuple[str | None, int | None, str, str]] = Counter()
    written: dict[tuple[str | None, int | None, str, str], int | None] = {}
    cats = []
    for node in graph.module.graph.nodes:
        op = aten_op_name(node)
        if op is None:
            continue
        total += 1
        if op == "cat":
            dtypes = _input_dtypes(node)
            if len(set(dtypes)) > 1:
                cats.append({"graph": graph.name, **_source(node, user_files), "dtypes": dtypes})
        group = copy_group(node)
        if group is None:
            continue
        copies[op] += 1
        source = _source(node, user_files)
        key = (source["file"], source["line"], op, group)
        lines[key] += 1
        written[key] = add_bytes(written.get(key, 0), written_bytes(node))
    entry = {
        "name": graph.name,
        "kind": graph.kind,
        "ops": total,
        "copies": dict(copies.most_common()),
        "lines": [_line_entry(key, count, written[key]) for key, count in sorted(lines.items(), key=_line_order)],
    }
    return entry, cats


def _line_entry(key: tuple[str | None, int | None, str, str], count: int, written: int | None) -> dict[str, Any]:
    file, line, op, group = key
    return {"file": file, "line": line, "op": op, "group": group, "count": count, "bytes": written}


def written_bytes(node: torch.fx.Node) -> int | None:
    """Bytes the copy writes (its output tensor); None when the size is symbolic or unknown."""
    value = node.meta.get("val")
    numel = getattr(value, "numel", None)
    element_size = getattr(value, "element_size", None)
    if numel is None or element_size is None:
        return None
    count = numel()
    return count * element_size() if isinstance(count, int) else None


def add_bytes(a: int | None, b: int | None) -> int | None:
    """A sum that stays unknown once one part is."""
    return None if a is None or b is None else a + b


def _line_order(item: tuple[tuple[str | None, int | None, str, str], int]) -> tuple[Any, ...]:
    (file, line, op, _group), count = item
    return (-count, file or "", line or 0, op)


def _source(node: torch.fx.Node, user_files: set[str]) -> dict[str, Any]:
    found = user_line_of_stack_trace(node.meta.get("stack_trace"), user_files)
    if found is None:
        return {"file": None, "line": None}
    return {"file": display_path(found[0]), "line": found[1]}


def _input_dtypes(node: torch.fx.Node) -> list[str]:
    tensors = node.args[0] if node.args and isinstance(node.args[0], (list, tuple)) else []
    dtypes = []
    for arg in tensors:
        value = getattr(arg, "meta", {}).get("val")
        dtype = getattr(value, "dtype", None)
        if dtype is not None:
            dtypes.append(str(dtype).removeprefix("torch."))
    return dtypes
