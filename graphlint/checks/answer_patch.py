"""The answer of a kept solve extended in place, patched at the sites the extension added.

``Solver.finish`` builds the whole ``CallGraph`` from the solver's tables (on transformers'
``models/``, 1.5 CPU-s: every site's edges regrouped, every call's callee node read). An
extension (``incremental_solve.py``) adds call sites to one file and gives no existing node a
new value, so the answer it must give is the last one with the new sites' rows added: their
callees and per-copy edges, whether they resolved, whether their receivers hold host tensors
only, the compile wrappers they run, and what the new outside calls were handed
(``CallGraph.unseen``, ``escaped_wrappers``). ``Recorder`` notes
every edge the extension records; ``patched`` adds the new sites' rows to the last answer, or
says None where an edge went elsewhere (an old site, an entry point, a scope's implicit calls),
and then the caller finishes in full.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from itertools import islice
from typing import Any

from graphlint.checks.compile_wrappers import escaped_wrappers, wrapper_rows
from graphlint.checks.site_edges import absorb_outside, calls_by_site
from graphlint.checks.value_graph import HOST_TENSOR, CallGraph, Target, instance_calls
from graphlint.checks.valueflow import Solver


class Recorder:
    """What a kept solver holds before an extension, and the sites the extension records edges at."""

    def __init__(self, solver: Solver, file: int, first_call: int) -> None:
        self.file, self.first_call = file, first_call  # the new sites: ``first_call`` on, in ``file``
        self.callee_nodes, self.receivers = len(solver.callee_nodes), len(solver.receivers)
        self.outside_arguments = len(solver.outside_arguments)
        self.keys: set[tuple[Any, ...]] = set()
        self.elsewhere = False  # an edge recorded at a site that is not new

    def wrap(self, solver: Solver) -> Callable[..., None]:
        """``solver.record`` that notes where it records (``Solver.record``'s keys)."""
        record = type(solver).record

        def recording(site: Any, target: Target, kind: str, copy: str = "") -> None:
            if self.new(site):
                self.keys.add((*site, "") if len(site) == 2 else site)
            else:
                self.elsewhere = True
            record(solver, site, target, kind, copy)

        return recording

    def new(self, key: tuple[Any, ...]) -> bool:
        """Whether the site ``key`` (``(file, ordinal[, copy])``, ``("entry", ...)``...) is new."""
        return isinstance(key[0], int) and key[0] == self.file and key[1] >= self.first_call


def patched(solver: Solver, before: CallGraph, recorder: Recorder) -> CallGraph | None:
    """``before`` with the rows of the sites the extension added; None where the extension
    recorded an edge elsewhere or keyed a callee or receiver at an old site."""
    new_callees = added_entries(solver.callee_nodes, recorder.callee_nodes)
    new_receivers = added_entries(solver.receivers, recorder.receivers)
    if recorder.elsewhere or not all(recorder.new(key) for key in [*new_callees, *new_receivers]):
        return None
    edges = {key: solver.site_edges[key] for key in recorder.keys}
    callees, copies = calls_by_site(edges)
    absorb_outside(callees, copies, {}, solver.outside_any_sites)
    values, saturated = solver.values, solver.saturated
    resolved = {key[:2] for key, node in new_callees.items() if values[node] and node not in saturated}
    receiver_nodes: dict[tuple[int, int], list[int]] = {}
    for key, node in new_receivers.items():
        receiver_nodes.setdefault(key[:2], []).append(node)
    host = {  # as ``Solver.finish`` decides it
        key for key, nodes in receiver_nodes.items()
        if all(values[n] <= {HOST_TENSOR} and n not in saturated for n in nodes) and any(values[n] for n in nodes)
    }
    wrapper_calls, wrapper_only = wrapper_rows(new_callees, values, saturated)
    return dataclasses.replace(
        before,
        wrapper_calls={**before.wrapper_calls, **wrapper_calls} if wrapper_calls else before.wrapper_calls,
        wrapper_only=before.wrapper_only | wrapper_only,
        escaped_wrappers=before.escaped_wrappers
        | escaped_wrappers(islice(solver.outside_arguments, recorder.outside_arguments, None), values),
        callees={**before.callees, **callees} if callees else before.callees,
        copies={**before.copies, **copies} if copies else before.copies,
        resolved=before.resolved | resolved,
        host_receivers=before.host_receivers | host,
        instance_calls=before.instance_calls | instance_calls(new_callees, values, saturated),
        collapsed=solver.collapsed,
        unseen=before.unseen | solver.handed_out_unseen(recorder.outside_arguments),
    )


def added_entries(table: dict[Any, Any], before: int) -> dict[Any, Any]:
    """The entries put into ``table`` since it held ``before`` (a dict keeps insertion order)."""
    return dict(islice(reversed(table.items()), len(table) - before))

