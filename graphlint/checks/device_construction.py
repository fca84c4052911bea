"""Plain tensor attributes made on the target device while the framework's loader builds the model.

sglang's and vLLM's loaders build the model class under ``with torch.device(target)``
(``device-built-classes``): every factory without ``device=`` run then makes its tensor on the
target (``torch.tensor`` too: ``torch.utils._device``), so ``self.cache = torch.tensor(ids)`` in
an ``__init__`` is on the device, and its ``.to(x.device)`` copies nothing. The functions that
run only then (``construction_functions``) are those reached from the ``__init__`` of those
classes through the call graph, kept only where every call the graph knows of comes from one of
them: a class built elsewhere too (a sampler the runner makes) makes its tensors where that
caller's default device is. ``self.x`` is then on the device (``built_on_device``) where every
store of it in the class, its bases and the classes derived from it (``FileFacts.
attribute_stores``) is None, another attribute on the device kept or moved where it is (as the
rules take a buffer's ``.to(x.device)``: one device under capture), or a factory without a
device in a function that runs only while the loader builds; and no other object's ``x`` is
stored anywhere (``layer.x = ...`` after loading runs outside the loader's device).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphlint.checks.presets import glob_pattern
from graphlint.checks.value_graph import FunctionKey, Obj

if TYPE_CHECKING:
    from graphlint.checks.link import Project

# What a store puts in the attribute (``construction_stores.py``, which the walk runs: this module
# is read by warm runs, which import no libcst): a factory with no device of its own ("factory":
# the default device's, the target while the loader builds), None ("none": no tensor to move),
# another attribute of ``self`` ("state", its name), kept or moved where it is; else "other".
FACTORY, NONE, STATE, OTHER = "factory", "none", "state", "other"


def construction_functions(project: "Project") -> frozenset[FunctionKey]:
    """The functions that run only while the loader builds one of ``device_built_classes``."""
    patterns = [glob_pattern(glob) for glob in project.device_built_classes]
    if not patterns:
        return frozenset()
    roots: set[FunctionKey] = set()
    for file, linked in enumerate(project.files):
        defs = linked.facts.flow.defs
        for qualname, definition in defs.items():
            init = f"{qualname}.__init__"
            if definition.kind == "class" and init in defs and any(p.match(f"{linked.module}.{qualname}") for p in patterns):
                roots.add(FunctionKey(file, init))
    reached = set(roots)
    pending = list(roots)
    while pending:
        key = pending.pop()
        for ordinal in project.calls_in(key):
            for target in project.targets(key.file, ordinal):
                if isinstance(target, FunctionKey) and target not in reached:
                    reached.add(target)
                    pending.append(target)
    callers: dict[FunctionKey, set[FunctionKey]] = {}
    for (file, ordinal), targets in project.graph.callees.items():
        site = project.site(file, ordinal) if isinstance(file, int) else None
        if site is None:
            continue
        for target in targets:
            if isinstance(target, FunctionKey) and target in reached:
                callers.setdefault(target, set()).add(FunctionKey(file, site.scope))
    kept = set(reached)
    changed = True
    while changed:  # drop what a function outside the kept ones calls too, until none is left
        changed = False
        for key in list(kept):
            if any(caller not in kept for caller in callers.get(key, ())):
                kept.discard(key)
                changed = True
    return frozenset(kept)


def built_on_device(project: "Project", file: int, class_name: str, attribute: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether ``self.attribute`` of ``class_name`` (of ``file``) is on the target device in every
    instance, made there while the loader built the model (see the module's docstring)."""
    if attribute in seen or attribute in project.foreign_stores:
        return False
    classes = project.related_classes(("C", file, class_name))
    stores = [
        (FunctionKey(cls[1], function), kind, source)
        for cls in classes
        for function, kind, source in project.files[cls[1]].facts.attribute_stores.get(f"{cls[2]}.{attribute}", ())
    ]
    if not stores:
        return False
    building = project.construction_functions
    made = False  # by some store other than moving the attribute itself
    for function, kind, source in stores:
        if kind == NONE or (kind == STATE and source == attribute):
            continue
        made = True
        if kind == FACTORY and function in building:
            continue
        if kind == STATE and (
            _module_state(project, classes, source) or built_on_device(project, file, class_name, source, seen | {attribute})
        ):
            continue
        return False
    return made


def _module_state(project: "Project", classes: list[Obj], attribute: str) -> bool:
    """Whether one of ``classes`` keeps ``self.attribute`` as a parameter, buffer or submodule."""
    return any(attribute in project.files[cls[1]].facts.module_state.get(cls[2], ()) for cls in classes)
