"""The solved graph's call edges as ``CallGraph`` gives them: per call site, and per method copy
where the copies per receiver class or call site take part (``valueflow.Solver.finish``)."""

from __future__ import annotations

from typing import Any

from graphlint.checks.value_graph import Target


def calls_by_site(
    edges: dict[tuple[Any, ...], dict[tuple[Target, str], str]],
) -> tuple[dict[Any, dict[Target, str]], dict[tuple[Any, ...], dict[tuple[Target, str], str]]]:
    """The call graph (each site's callees, over every copy of the method it is in) and, for the
    sites where methods' copies per receiver class take part, the calls per copy."""
    callees: dict[Any, dict[Target, str]] = {}
    copied: set[Any] = set()
    for key, targets in edges.items():
        site = key[:2] if isinstance(key[0], int) else key
        found = callees.setdefault(site, {})
        for (target, copy), kind in targets.items():
            found.setdefault(target, kind)
            if copy:
                copied.add(site)
        if isinstance(key[0], int) and key[2]:
            copied.add(site)
    copies = {key: targets for key, targets in edges.items() if (key[:2] if isinstance(key[0], int) else key) in copied}
    return callees, copies


def entries_per_copy(edges: dict[tuple[Any, ...], dict[tuple[Target, str], str]]) -> dict[tuple[Any, ...], dict[tuple[Target, str], str]]:
    """An entry point in a method's copy (``("entry", file, index, copy)``) is merged into the
    entry's own site; for such entries each copy's targets are kept apart too (the method's own
    body as copy ``""``), so that a copy whose compile call cannot run is left out
    (``parameter_constants.py``)."""
    copied = [key for key in edges if key[0] == "entry" and len(key) == 4]
    per_copy: dict[tuple[Any, ...], dict[tuple[Target, str], str]] = {}
    for key in copied:
        per_copy.setdefault((*key[:3], ""), dict(edges.get(key[:3], {})))
        per_copy[key] = edges[key]
    for key in copied:
        merged = edges.setdefault(key[:3], {})
        for target, kind in edges.pop(key).items():
            merged.setdefault(target, kind)
    return per_copy
