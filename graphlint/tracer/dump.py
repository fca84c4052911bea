"""``--dump DIR``: each recorded graph's readable code, and depyf's decompiled bytecode.

depyf cannot decompile every bytecode of newer Pythons and torch releases; a failure is written
down in the dump (and returned) instead of stopping the trace.
"""

from __future__ import annotations

from typing import Any

from graphlint.tracer.recording import RecordedGraph
from graphlint.tracer.stages.base import StageContext


def dump_graphs(ctx: StageContext, folder: str, graphs: list[RecordedGraph]) -> list[str]:
    """Writes ``folder/<graph name>.py`` per graph; returns the paths written."""
    written = []
    for graph in graphs:
        text = graph.module.print_readable(print_output=False, include_stride=True, include_device=True)
        path = ctx.dump(f"{folder}/{graph.name}.py", text)
        if path is not None:
            written.append(str(path))
    return written


def dump_decompiled(ctx: StageContext, fn: Any) -> dict[str, str]:
    """depyf's source for the bytecode dynamo made from ``fn``'s code (each cache entry).
    Returns {entry name: "ok" | "failed: why"}."""
    if ctx.options.dump_dir is None:
        return {}
    import torch

    code = getattr(getattr(fn, "forward", fn), "__code__", None)
    if code is None:
        return {}
    try:
        import depyf
    except ImportError as exc:
        ctx.dump("decompiled/NOTE.txt", f"depyf is not installed ({exc}); pip install depyf\n")
        return {"depyf": f"failed: {exc}"}
    outcome: dict[str, str] = {}
    try:  # a private torch API: it may move between releases
        entries = torch._dynamo.eval_frame._debug_get_cache_entry_list(code)
    except (AttributeError, TypeError) as exc:
        ctx.dump("decompiled/NOTE.txt", f"cannot list dynamo's code for {code.co_name}: {exc}\n")
        return {"depyf": f"failed: {exc}"}
    for i, entry in enumerate(entries):
        name = f"{code.co_name}_entry_{i}"
        try:
            source = depyf.decompile(entry.code)
        except Exception as exc:  # depyf raises many kinds on bytecode it does not know
            ctx.dump(f"decompiled/{name}.FAILED.txt", f"depyf could not decompile this entry: {type(exc).__name__}: {exc}\n")
            outcome[name] = f"failed: {type(exc).__name__}: {exc}"
            continue
        ctx.dump(f"decompiled/{name}.py", source)
        outcome[name] = "ok"
    return outcome
