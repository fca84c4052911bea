"""The ordered collective ops of a rank's recorded graphs.

Dynamo turns ``dist.all_reduce(t)`` and friends into functional collectives
(``torch.ops._c10d_functional.all_reduce`` + ``wait_tensor``); AOTAutograd keeps them; some code
calls the in-place c10d ops (``torch.ops.c10d.allreduce_``) or torch.distributed functions that
are allowed in the graph. When two ranks compile different graphs, these lists stop matching,
and a backend that orders or fuses collectives per graph (torchair/GE, inductor) makes the ranks
issue them in different orders: the job hangs.
"""

from __future__ import annotations

from typing import Any

from graphlint.tracer.locate import display_path, user_line_of_stack_trace
from graphlint.tracer.recording import RecordedGraph

COLLECTIVE_NAMESPACES = frozenset({"_c10d_functional", "c10d_functional", "c10d"})
NOT_COLLECTIVES = frozenset({"wait_tensor"})  # waits on a collective already listed


def collective_name(target: Any) -> str | None:
    """``all_reduce`` for ``_c10d_functional.all_reduce.default``; the function name for a
    ``torch.distributed`` function called in the graph; None for anything else."""
    schema = getattr(target, "_schema", None)
    qualified = schema.name if schema is not None else getattr(target, "_qualified_op_name", None)
    if qualified:
        namespace, _, name = qualified.partition("::")
        return name if namespace in COLLECTIVE_NAMESPACES and name not in NOT_COLLECTIVES else None
    module = getattr(target, "__module__", None) or ""
    if module.startswith("torch.distributed"):
        name = getattr(target, "__name__", None)
        return name if name and name not in NOT_COLLECTIVES else None
    return None


def collectives_in_graphs(graphs: list[RecordedGraph], user_files: set[str]) -> list[dict[str, Any]]:
    """``[{"graph": "graph_0", "op": "all_reduce", "args": ["sum", "0"], "file", "line"}]`` in
    graph order, then node order. ``args`` are the op's string arguments (reduce op, group
    name): two ranks disagreeing on them mismatch as surely as on the op."""
    found = []
    for graph in graphs:
        for node in graph.module.graph.nodes:
            if node.op != "call_function":
                continue
            name = collective_name(node.target)
            if name is None:
                continue
            where = user_line_of_stack_trace(node.meta.get("stack_trace"), user_files)
            found.append(
                {
                    "graph": graph.name, "op": name,
                    "args": [a for a in (*node.args, *node.kwargs.values()) if isinstance(a, str)],
                    "file": display_path(where[0]) if where else None, "line": where[1] if where else None,
                }
            )
    return found
