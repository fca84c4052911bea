"""Modules that cannot be imported on the platform checked (``unavailable-modules``).

A module whose top-level imports (``top_imports.py``) name a package the platform's install
lacks (sglang's ``sgl_kernel`` on an Ascend NPU) raises ``ImportError`` when imported there, and
so does every module that imports it at its top level, and every module of a package whose
``__init__`` cannot be imported: nothing they define runs on that platform, and no region enters
their functions (as for ``other-platform-modules``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from graphlint.checks.class_hierarchy import absolute_name
from graphlint.checks.link import LinkedFile


def unimportable_files(files: Sequence[LinkedFile], unavailable: Sequence[str]) -> dict[int, str]:
    """File index → the module whose import fails first on its way (an ``unavailable`` one, or a
    project module that cannot be imported), for each file that cannot be imported. A name of
    ``unavailable`` covers its submodules; what a top-level package of the project's (a
    namespace package too) holds is never missing."""
    if not unavailable:
        return {}
    by_module: dict[str, list[int]] = {}
    for index, linked in enumerate(files):
        by_module.setdefault(linked.module, []).append(index)
    own = {module.split(".", 1)[0] for module in by_module}  # the project's top-level packages
    missing = tuple(unavailable)
    failing: dict[int, str] = {}
    importers: dict[int, set[int]] = {}  # file → the files whose import runs its import
    for index, linked in enumerate(files):
        names = [absolute_name(name, linked.module, linked.is_package) for name in linked.facts.top_imports]
        for name in [*names, linked.module]:  # a module's own packages are imported before it
            parts = name.split(".")
            for length in range(1, len(parts) + 1):
                prefix = ".".join(parts[:length])
                held = by_module.get(prefix)
                if parts[0] not in own and index not in failing and _is_missing(prefix, missing):
                    failing[index] = prefix
                for imported in held or ():
                    if imported != index:
                        importers.setdefault(imported, set()).add(index)
    queue = deque(failing)
    while queue:
        imported = queue.popleft()
        for importer in sorted(importers.get(imported, ())):
            if importer not in failing:
                failing[importer] = files[imported].module
                queue.append(importer)
    return failing


def _is_missing(module: str, missing: tuple[str, ...]) -> bool:
    return any(module == name or module.startswith(name + ".") for name in missing)
