"""The solved graph's call edges as ``CallGraph`` gives them: per call site, and per method copy
where the copies per receiver class or call site take part (``valueflow.Solver.finish``)."""

from __future__ import annotations

from typing import Any

from graphlint.checks.value_graph import OUTSIDE_ANY, Target


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


def absorb_outside(
    callees: dict[Any, dict[Target, str]],
    copies: dict[tuple[Any, ...], dict[tuple[Target, str], str]],
    implicit: dict[tuple[int, str], set[Target]],
    sites: set[tuple[Any, ...]],
) -> dict[tuple[int, str], set[Target]]:
    """At a site that runs OUTSIDE_ANY's ``"*"`` (some outside names: ``value_graph.py``) the
    outside names recorded before the collapse are dropped: which ones came first hangs on the
    order. ``sites``: such sites as ``(file, ordinal)`` or ``("entry", file, index)``; the
    scopes' implicit calls are given back as a copy. Each table's entry on its own: a call in
    one copy of a method that runs ``"*"`` leaves the others' names as they are."""
    star = OUTSIDE_ANY[1]
    for key in [key for key in callees if key in sites and star in callees[key]]:
        callees[key] = {t: kind for t, kind in callees[key].items() if not isinstance(t, str) or t == star}
    for key in [key for key in copies if (key[:2] if isinstance(key[0], int) else key[:3]) in sites]:
        if any(t == star for t, _ in copies[key]):  # each copy on its own: it runs "*" or not
            copies[key] = {(t, c): kind for (t, c), kind in copies[key].items() if not isinstance(t, str) or t == star}
    return {
        key: {t for t in targets if not isinstance(t, str) or t == star} if star in targets else set(targets)
        for key, targets in implicit.items()
    }
