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


class ImportNames:
    facts: FileFacts
    qualified: dict[int, tuple[cst.BaseExpression, str | None]]  # what site_values.py has qualified

    def _on_import(self, node: cst.CSTNode) -> list[Any]:
        assert isinstance(node, cst.Import)
        self.qualified.clear()
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.facts.imports[alias.asname.name.value] = full
            else:
                head = full.split(".", 1)[0]
                self.facts.imports[head] = head
        return []

    def _on_import_from(self, node: cst.CSTNode) -> list[Any]:
        assert isinstance(node, cst.ImportFrom)
        self.qualified.clear()
        if isinstance(node.names, cst.ImportStar):
            return []
        base = "." * len(node.relative)
        if node.module is not None:
            base += dotted_name(node.module) or ""
        for alias in node.names:
            name = dotted_name(alias.name)
            if name is None:
                continue
            local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
            joiner = "" if base.endswith(".") or not base else "."
            self.facts.imports[local] = f"{base}{joiner}{name}"
        return []
