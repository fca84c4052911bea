"""What a call's or a return's condition trees test (``facts.Expr``: ``["none", p]``,
``["truth", p]`` under ``not`` / ``and`` / ``or``): read by the walk (``call_conditions.py``)
and by the link (``parameter_constants.py``), so it depends on neither."""

from __future__ import annotations

from typing import Any

from graphlint.checks.facts import Expr


def atoms(around: list[Any]) -> set[str]:
    """The parameters the condition trees of ``around`` test (``is None`` / truth)."""
    found: set[str] = set()

    def visit(tree: Expr) -> None:
        if tree[0] in ("none", "truth"):
            found.add(tree[1])
        elif tree[0] in ("not", "and", "or"):
            for part in tree[1:]:
                visit(part)

    for tree, *_ in around:
        visit(tree)
    return found
