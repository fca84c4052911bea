"""The file's import table, as the extractor walks its ``import`` statements (a mixin of it).

``facts.imports`` maps each name an import binds to what it names (``np`` → ``numpy``,
``Linear`` → ``torch.nn.Linear``, ``helpers`` → ``.helpers`` for a relative import); the names the
walk has already qualified are forgotten at each import, since it may rebind one of them.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from graphlint.checks.facts import FileFacts
from graphlint.checks.syntax import dotted_name


def imported_names(node: cst.Import | cst.ImportFrom) -> list[tuple[str, str]]:
    """The names an import statement binds, each with what it names (``import a.b`` binds
    ``a``; a relative import's target keeps its dots); none for ``import *``."""
    if isinstance(node, cst.Import):
        bound = []
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                bound.append((alias.asname.name.value, full))
            else:
                head = full.split(".", 1)[0]
                bound.append((head, head))
        return bound
    if isinstance(node.names, cst.ImportStar):
        return []
    base = "." * len(node.relative)
    if node.module is not None:
        base += dotted_name(node.module) or ""
    joiner = "" if base.endswith(".") or not base else "."
    bound = []
    for alias in node.names:
        name = dotted_name(alias.name)
        if name is None:
            continue
        local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
        bound.append((local, f"{base}{joiner}{name}"))
    return bound


class ImportNames:
    facts: FileFacts
    qualified: dict[int, tuple[cst.BaseExpression, str | None]]  # what site_values.py has qualified

    def _on_import(self, node: cst.CSTNode) -> list[Any]:
        assert isinstance(node, cst.Import)
        self.qualified.clear()
        self.facts.imports.update(imported_names(node))
        return []

    def _on_import_from(self, node: cst.CSTNode) -> list[Any]:
        assert isinstance(node, cst.ImportFrom)
        self.qualified.clear()
        self.facts.imports.update(imported_names(node))
        return []
