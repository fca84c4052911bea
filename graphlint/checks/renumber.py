"""A file's calls in the kept solve's numbering, for a statement inserted above other calls.

Calls are numbered in source order (``facts.CallSite``), so a call inserted in the middle of a
file numbers every later call anew, and the kept solve (``incremental_solve.py``), which is keyed
by those numbers, could not be extended by it. Here the edited file's facts are written in the
kept solve's numbering instead: the calls it already had keep their numbers, the inserted ones
come after all of them, and every reference to a call (``["c", n]`` in a value, an entry's
``["arg", n]``, ``after_super``, host and returned calls) follows; the kept assignments come
first, the inserted ones after. The extension then sees calls appended, and checks, as for
any, that the facts are exactly the old ones with some appended. Its answer is written back in
the file's own numbering (``answer_in``).
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from typing import Any

from graphlint.checks.facts import CallSite, FileFacts
from graphlint.checks.value_graph import CallGraph


def inserted(before: FileFacts, after: FileFacts, numbering: list[int], kept: int) -> list[int] | None:
    """The kept solve's number of each call of ``after``, taking ``after``'s calls as
    ``before``'s with a run of calls inserted where they first differ (``numbering``:
    ``before``'s calls' numbers in the kept solve, which has ``kept`` calls in this file); None
    where calls were removed. The extension checks that it is so."""
    calls_a, calls_b = before.flow.calls, after.flow.calls
    added = len(calls_b) - len(calls_a)
    if added < 0:
        return None
    first = next((i for i, (a, b) in enumerate(zip(calls_a, calls_b)) if a != b and _site(a) != _site(b)), len(calls_a))
    return [*numbering[:first], *range(kept, kept + added), *numbering[first:]]


def _site(site: CallSite | None) -> Any:
    """What the solve reads of a call, but the numbers of the calls it names (those after an
    insertion are all renumbered)."""
    return None if site is None else (site.scope, json.dumps(_renumbered([site.callee, site.args], None)))


def in_numbering(facts: FileFacts, numbering: list[int], kept_assigns: list[Any]) -> FileFacts | None:
    """``facts`` with call ``i`` numbered ``numbering[i]`` and ``kept_assigns`` (the kept solve's
    assignments of the file) first among its assignments; None where they are not all there."""
    number = lambda value: _renumbered(value, numbering)  # noqa: E731
    flow = facts.flow
    calls: list[CallSite | None] = [None] * len(numbering)
    for ordinal, site in enumerate(flow.calls):
        calls[numbering[ordinal]] = None if site is None else dataclasses.replace(
            site, callee=number(site.callee), args=number(site.args), star=number(site.star),
            keywords=number(site.keywords), double_star=number(site.double_star),
            after_super=None if site.after_super is None else numbering[site.after_super],
        )
    assigns = [tuple(number(list(pair))) for pair in flow.assigns]
    wanted = Counter(json.dumps(pair) for pair in kept_assigns)
    new = []
    for pair in assigns:
        key = json.dumps(pair)
        if wanted[key] > 0:
            wanted[key] -= 1
        else:
            new.append(pair)
    if +wanted:  # a kept assignment is gone or changed
        return None
    renumbered = dataclasses.replace(
        flow, assigns=[*kept_assigns, *new], calls=calls,
        decorations=[dataclasses.replace(d, decorator=number(d.decorator), value=number(d.value)) for d in flow.decorations],
        implicit=[dataclasses.replace(i, value=number(i.value)) for i in flow.implicit],
        returned_calls=[numbering[o] for o in flow.returned_calls],
        call_conditions={numbering[o]: c for o, c in flow.call_conditions.items()},
        digest="",
    )
    entries = [dataclasses.replace(e, targets=[_entry_target(t, numbering) for t in e.targets]) for e in facts.entries]
    return dataclasses.replace(facts, flow=renumbered, entries=entries, host_calls=[numbering[o] for o in facts.host_calls])


def answer_in(graph: CallGraph, numberings: dict[int, list[int]], copied: dict[int, list[tuple[Any, ...]]]) -> CallGraph:
    """``graph`` (the kept solve's numbering) with the sites of ``numberings``' files numbered
    as the files number them (``numberings``: file → its calls' numbers in the kept solve;
    ``copied``: file → the keys of ``graph.copies`` of its sites). Only the rows of sites whose
    number differs are moved: the tables are copied, not walked."""
    tables: list[Any] = [
        dict(graph.callees), dict(graph.copies), set(graph.resolved), set(graph.host_receivers),
        dict(graph.wrapper_calls), set(graph.wrapper_only), set(graph.instance_calls),
    ]
    backs: dict[int, dict[int, int]] = {}
    for file, numbering in numberings.items():
        back = backs[file] = {solved: own for own, solved in enumerate(numbering) if own != solved}
        keys = [(file, solved) for solved in back]
        moved: list[list[tuple[Any, Any]]] = [[] for _ in tables]
        for table, rows, candidates in zip(tables, moved, (keys, copied.get(file, ()), keys, keys, keys, keys, keys)):
            for key in candidates:
                if key[1] in back and key in table:
                    rows.append((key, table[key] if isinstance(table, dict) else None))
            for key, _ in rows:
                table.remove(key) if isinstance(table, set) else table.pop(key)
        for table, rows in zip(tables, moved):
            for key, row in rows:
                own = (file, back[key[1]], *key[2:])
                if isinstance(table, set):
                    table.add(own)
                else:
                    table[own] = row
    callees, copies, resolved, host, wrapper_calls, wrapper_only, instances = tables

    def compile_call(call: tuple[int, int]) -> tuple[int, int]:  # a compile call, as its file numbers it
        return (call[0], backs.get(call[0], {}).get(call[1], call[1]))

    if any(backs.values()):
        wrapper_calls = {site: {compile_call(c) for c in compiles} for site, compiles in wrapper_calls.items()}
    return dataclasses.replace(
        graph, callees=callees, copies=copies, resolved=resolved, host_receivers=host, wrapper_calls=wrapper_calls,
        wrapper_only=wrapper_only, instance_calls=instances, escaped_wrappers={compile_call(c) for c in graph.escaped_wrappers},
    )


def _renumbered(value: Any, numbering: list[int] | None) -> Any:
    """``value`` (an expression, or lists and tuples of them) with ``["c", n]`` numbered anew
    (``numbering`` None: with no number)."""
    if isinstance(value, (list, tuple)):
        if len(value) == 2 and value[0] == "c" and isinstance(value[1], int) and not isinstance(value[1], bool):
            return type(value)(["c", None if numbering is None else numbering[value[1]]])
        return type(value)(_renumbered(part, numbering) for part in value)
    return value


def _entry_target(target: Any, numbering: list[int]) -> Any:
    return [target[0], numbering[target[1]]] if target[0] in ("arg", "receiver") else target
