"""Entry points the project's knowledge names instead of its code: ``compile-roots`` /
``capture-roots`` (functions by dotted-name glob) and ``compile-exports`` / ``capture-exports``
(the model classes a module binds to a name, sglang's ``EntryClass``), from ``[tool.graphlint]``
and the framework presets. ``export-forward-parameters`` keeps of those classes the models the
framework's runner can run: a class whose ``forward`` takes none of the arguments it hands over
by the names given (a vision tower exported next to its model) is no root.

They become ordinary entries of the files that define them, added after linking (they depend
on module names, which facts do not know), so the region walk treats them like any other. A
captured root is eager capture (``traced=False``): the frameworks capture an eager run of the
model, so dynamo's boundaries do not stop it, as with ``torch.npu.graph``.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from graphlint.checks.class_hierarchy import ClassHierarchy
from graphlint.checks.facts import MODULE_SCOPE, EntryFacts, Expr, FileFacts, RegionKind
from graphlint.checks.link import Project
from graphlint.checks.presets import glob_pattern
from graphlint.checks.value_graph import LinkedModule
from graphlint.config import Knowledge


def add_root_entries(project: Project, known: Knowledge) -> None:
    roots = [(glob_pattern(g), "compiled") for g in known.compile_roots]
    roots += [(glob_pattern(g), "capture") for g in known.capture_roots]
    exports = [(glob_pattern(m), names, "compiled") for m, names in known.compile_exports.items()]
    exports += [(glob_pattern(m), names, "capture") for m, names in known.capture_exports.items()]
    runner_parameters = [(glob_pattern(m), set(names)) for m, names in known.export_forward_parameters.items()]
    if not roots and not exports:
        return
    # Built apart from the project's own (a cached view of the facts, which gain entries here).
    classes = ClassHierarchy.of([LinkedModule(f.module, f.is_package, f.facts) for f in project.files])
    for index, linked in enumerate(project.files):
        if linked.facts.error is not None:
            continue
        # The entries are added to a copy: the facts may be kept (a session links them again).
        facts = linked.facts = dataclasses.replace(linked.facts, entries=list(linked.facts.entries))
        modules = {linked.module, _path_module(linked.path)}  # the second for namespace packages
        for qualname, function in facts.functions.items():
            if qualname == MODULE_SCOPE:
                continue
            kind = _first_kind(roots, [f"{module}.{qualname}" for module in modules])
            if kind is not None:
                facts.entries.append(_entry(kind, function.line, [["def", qualname]]))
        for pattern, names, kind in exports:
            if not any(pattern.match(module) for module in modules):
                continue
            wanted = [p for glob, p in runner_parameters if any(glob.match(module) for module in modules)]
            for name in names:
                for qualname in _bound_classes(facts, name):
                    if all(_takes(_method_params(classes, index, qualname, "forward"), p) for p in wanted):
                        facts.entries.append(_entry(kind, facts.flow.defs[qualname].line, [["def", qualname]]))
                    else:  # named by the coverage line and ``graphlint regions``
                        project.unrun_exports.append((index, qualname))


def _first_kind(roots: list[tuple[re.Pattern[str], RegionKind]], names: list[str]) -> RegionKind | None:
    for pattern, kind in roots:
        if any(pattern.match(name) for name in names):
            return kind
    return None


def _method_params(classes: ClassHierarchy, file: int, class_name: str, method: str) -> list[tuple[str, str]] | None:
    """The parameters of the ``method`` a class of ``file`` defines or inherits from a class of
    the project, first in its MRO; None where no def of it is found."""
    for base in classes.mro(("C", file, class_name)):
        definition = classes.files[base[1]].facts.flow.defs.get(f"{base[2]}.{method}") if base[0] == "C" else None
        if definition is not None and definition.kind == "function":
            return definition.params
    return None


def _takes(params: list[tuple[str, str]] | None, names: set[str]) -> bool:
    """Whether a ``forward`` can take an argument the runner hands it by one of ``names``: it has
    such a parameter, or takes ``*args`` / ``**kwargs``, or graphlint found no def of it."""
    if params is None:
        return True
    return any(kind in ("*", "**") or name in names for name, kind in params)


def _bound_classes(facts: FileFacts, name: str) -> list[str]:
    """The classes of this file a module-level name is bound to (``EntryClass = [A, B]``)."""
    found: list[str] = []
    pending: list[Expr] = [value for target, value in facts.flow.assigns if target == ["v", name]]
    while pending:
        value = pending.pop()
        if value[0] == "u":
            pending.extend(value[1:])
        elif value[0] in ("d", "v") and facts.flow.defs.get(value[1]) is not None and facts.flow.defs[value[1]].kind == "class":
            # ``["v", name]``: a module-level name, which is the qualname of a top-level class
            found.append(value[1])
    return sorted(set(found))


def _entry(kind: RegionKind, line: int, targets: list[Expr]) -> EntryFacts:
    return EntryFacts(line=line, kind=kind, traced=kind == "compiled", scope=MODULE_SCOPE, targets=targets, via="root")


def _path_module(path: Path) -> str:
    """The dotted name of a file's path (``/a/b/pkg/mod.py`` → ``a.b.pkg.mod``): its tail is the
    module's name however the packages above it are laid out."""
    parts = path.resolve().with_suffix("").parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)
