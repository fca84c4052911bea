"""Files → module names, the way the import system would name them.

A regular package is a directory with an ``__init__.py``: a file's name climbs through them
(``pkg/sub/mod.py`` → ``pkg.sub.mod``). Above the last one the name goes on through PEP 420
namespace packages (directories without ``__init__.py``) up to an *import root*: a directory on
``sys.path`` when the project runs. Roots are the ``src = [...]`` directories of
``[tool.graphlint]`` (as ruff's; a configured root ends the climb even through an
``__init__.py``), else found from the project's own imports: the outermost
directory above a file whose child the project imports by its top-level name (sglang's
``python/``, since its code says ``from sglang.srt.layers import ...``). A file under no root
keeps its regular-package name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from graphlint.checks.facts import FileFacts


class ModuleNames:
    def __init__(self, roots: Iterable[Path] = (), imported: Iterable[str] = (), top: Path | None = None) -> None:
        """``roots``: configured import roots; ``imported``: the top-level names the project's
        files import (absolute imports); ``top``: the project root, where the search stops."""
        self.roots = {r.resolve() for r in roots}
        self.imported = set(imported)
        self.top = top.resolve() if top is not None else None
        self._namespaces: dict[Path, tuple[str, ...]] = {}
        self._names: dict[Path, tuple[str, bool]] = {}  # a long-lived caller names its files once

    def name(self, path: Path) -> tuple[str, bool]:
        """The module name of ``path`` and whether it is a package's ``__init__``."""
        named = self._names.get(path)
        if named is None:
            named = self._names[path] = self._name(path)
        return named

    def _name(self, path: Path) -> tuple[str, bool]:
        path = path.resolve()
        is_package = path.name == "__init__.py"
        parts = [] if is_package else [path.stem]
        directory = path.parent
        while (directory / "__init__.py").exists() and directory.parent != directory and directory not in self.roots:
            parts.append(directory.name)
            directory = directory.parent
        parts.reverse()
        return ".".join([*self._namespace(directory), *parts]) or path.parent.name, is_package

    def _namespace(self, directory: Path) -> tuple[str, ...]:
        """The namespace-package parts between the import root and ``directory``."""
        cached = self._namespaces.get(directory)
        if cached is not None:
            return cached
        found: tuple[str, ...] = ()
        ancestors = [directory, *directory.parents]
        configured = [a for a in ancestors if a in self.roots]
        if configured:
            found = directory.relative_to(configured[0]).parts
        elif self.imported:
            for ancestor in ancestors:
                if self.top is not None and not ancestor.is_relative_to(self.top):
                    break
                between = directory.relative_to(ancestor).parts
                if ancestor != directory and between[0] in self.imported and not (ancestor / "__init__.py").exists():
                    found = between  # the outermost wins: keep looking up
        self._namespaces[directory] = found
        return found


def module_name(path: Path) -> tuple[str, bool]:
    """The regular-package name of ``path`` (no import roots known)."""
    return ModuleNames().name(path)


def imported_heads(imports: Iterable[str]) -> set[str]:
    """Top-level names of absolute imports (``torch.nn`` → ``torch``)."""
    return {name.split(".", 1)[0] for name in imports if name and not name.startswith(".")}


class ImportedHeads:
    """``imported_heads`` of every file's imports, for a caller that asks again and again (a
    session): each file's heads are kept with its facts (never changed once made) and counted,
    so that a check takes again only the files whose facts are new."""

    def __init__(self) -> None:
        self._files: dict[Path, tuple[FileFacts, set[str]]] = {}
        self._counts: Counter[str] = Counter()  # head → how many kept files import it

    def of(self, facts: Mapping[Path, FileFacts]) -> set[str]:
        """The top-level names the files of ``facts`` import (absolute imports)."""
        for path, file_facts in facts.items():
            kept = self._files.get(path)
            if kept is None or kept[0] is not file_facts:
                if kept is not None:
                    self._forget(kept[1])
                heads = imported_heads(file_facts.imports.values())
                self._counts.update(heads)
                self._files[path] = (file_facts, heads)
        if len(self._files) != len(facts):  # files gone since the last check
            for path in [p for p in self._files if p not in facts]:
                self._forget(self._files.pop(path)[1])
        return set(self._counts)

    def _forget(self, heads: set[str]) -> None:
        for head in heads:
            self._counts[head] -= 1
            if not self._counts[head]:
                del self._counts[head]
