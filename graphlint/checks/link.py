"""The facts of all files → one project: module names, and the call graph they make together.

Module names come from the files' places under the project's import roots (``modules.py``);
the call graph is the assignment graph solved to a fixed point (``valueflow.py``; kept between
runs by ``graph_cache.py``). This module answers what the regions walk and the commands ask of
them: the calls made in a function, the functions each call runs, the functions an entry point
hands to dynamo or to capture.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from graphlint.checks import apis
from graphlint.checks.class_hierarchy import ClassHierarchy
from graphlint.checks.device_construction import built_on_device, construction_functions
from graphlint.checks.facts import MODULE_SCOPE, CallSite, FileFacts, FunctionFacts
from graphlint.checks.graph_cache import SolvedGraphs
from graphlint.checks.modules import ModuleNames
from graphlint.checks.value_graph import CallGraph, FunctionKey, LinkedModule, Obj, Target


@dataclass
class LinkedFile:
    path: Path
    display: str  # the path as reported (relative to the working directory when possible)
    module: str
    is_package: bool
    facts: FileFacts
    library: bool = False  # read-only context (an installed library, an extra path): never reported


class LinkedFiles:
    """Each path's ``LinkedFile``, for a caller that links again and again (a session): made
    again only where the file's facts (never changed once made) or the module naming changed."""

    def __init__(self) -> None:
        self._names: ModuleNames | None = None
        self._files: dict[Path, LinkedFile] = {}

    def linked(
        self, paths: Iterable[Path], facts: Mapping[Path, FileFacts], names: ModuleNames, display: Callable[[Path], str]
    ) -> list[LinkedFile]:
        """The files of ``paths``, in that order; ``display`` says how a path is reported."""
        kept = self._files if names is self._names else {}
        self._names, self._files = names, {}
        for path in paths:
            linked = kept.get(path)
            if linked is None or linked.facts is not facts[path]:  # (roots.py gives a file's entries new facts)
                linked = LinkedFile(path, display(path), *names.name(path), facts[path])
            self._files[path] = linked
        return list(self._files.values())


@dataclass
class Project:
    files: list[LinkedFile]
    # Class (dotted name, globs) → methods that calling an instance runs besides ``forward``:
    # a framework's dispatch (vLLM's ``CustomOp`` → ``forward_oot``), from presets and config.
    dispatch: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Class (dotted name, globs) → methods its dispatch never picks on CUDA or NPU (``forward_cpu``)
    not_dispatched: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Where the graph comes from: solved, or kept from a solve of the same facts (``graph_cache.py``).
    graphs: SolvedGraphs = field(default_factory=SolvedGraphs)
    preview: bool = False  # the value flow's preview contexts (docs/callgraph.md "Call-site contexts")
    _sites: dict[int, dict[str, list[int]]] = field(default_factory=dict)  # file → scope → call ordinals
    constants: Any = None  # what parameters hold on every call, once asked (``parameter_constants.py``)
    # Exported model classes that are no roots: the framework's runner cannot call their
    # ``forward`` (``export-forward-parameters``, ``roots.py``): (file, class qualname).
    unrun_exports: list[tuple[int, str]] = field(default_factory=list)
    # Classes (dotted, globs) the framework's loader builds under its target device (``device-built-classes``)
    device_built_classes: tuple[str, ...] = ()
    # Functions (dotted, globs) → the parameter they return on the device of (``device-returns``)
    device_returns: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @cached_property
    def _linked_modules(self) -> list[LinkedModule]:
        return [LinkedModule(f.module, f.is_package, f.facts) for f in self.files]

    @cached_property
    def graph(self) -> CallGraph:
        return self.graphs.graph(self._linked_modules, self.dispatch, self.not_dispatched, self.preview)

    @cached_property
    def entry_files(self) -> list[int]:
        """The files with entry points (few of a large project's): what the regions walk from.
        Asked after ``roots.add_root_entries`` adds its entries."""
        return [index for index, linked in enumerate(self.files) if linked.facts.entries]

    @cached_property
    def _classes(self) -> ClassHierarchy:
        """Built when first asked (``inherits_module_state``, ``runs_module``), not on every run."""
        return ClassHierarchy.of(self._linked_modules)

    def inherits_module_state(self, file: int, class_name: str, attribute: str) -> bool:
        """Whether a base class of ``class_name`` (of ``file``) keeps ``self.attribute`` as a
        parameter, registered buffer or submodule (``FileFacts.module_state``)."""
        if class_name not in self.files[file].facts.flow.defs:
            return False
        return any(
            base[0] == "C" and attribute in self.files[base[1]].facts.module_state.get(base[2], ())
            for base in self._classes.mro(("C", file, class_name))[1:]
        )

    @cached_property
    def construction_functions(self) -> frozenset[FunctionKey]:
        """The functions that run only while the framework's loader builds the model, under its
        target device (``device_construction.py``)."""
        return construction_functions(self)

    @cached_property
    def foreign_stores(self) -> frozenset[str]:
        """The attribute names any file stores on an object other than ``self``."""
        return frozenset(name for linked in self.files for name in linked.facts.foreign_stores)

    def related_classes(self, cls: Obj) -> list[Obj]:
        """``cls``, its project bases and the project classes derived from it: whose methods may
        store an attribute of its instances."""
        derived = [
            ("C", file, qualname)
            for file, linked in enumerate(self.files)
            for qualname, definition in linked.facts.flow.defs.items()
            if definition.kind == "class" and cls in self._classes.mro(("C", file, qualname))[1:]
        ] if cls in self._classes.derived else []
        return [c for c in (*self._classes.mro(cls), *derived) if c[0] == "C"]

    def instance_classes(self, cls: Obj) -> list[Obj] | None:
        """The classes whose code an instance of ``cls`` (or of a project class derived from it)
        runs: ``related_classes`` and their bases, outside ones too; None where a base of one of
        them does not resolve (its code is not known)."""
        found: dict[Obj, None] = {}
        for related in self.related_classes(cls):
            for base in self._classes.mro(related):
                if base[0] == "C" and base not in found:
                    for expr in self.files[base[1]].facts.flow.defs[base[2]].bases:
                        if not any(o[0] in ("C", "X") for o in self._classes.static(base[1], expr)):
                            return None
                found[base] = None
        return list(found)

    def outside_name(self, dotted: str) -> bool:
        """Whether an absolute dotted name is outside the project (no prefix of it is a module of it)."""
        parts = dotted.split(".")
        return not any(".".join(parts[:end]) in self._classes.packages for end in range(1, len(parts) + 1))

    def built_on_device(self, file: int, class_name: str, attribute: str) -> bool:
        """Whether the loader made ``self.attribute`` of ``class_name`` on its target device."""
        if not self.device_built_classes or class_name not in self.files[file].facts.flow.defs:
            return False
        return built_on_device(self, file, class_name, attribute)

    def runs_module(self, key: FunctionKey) -> bool:
        """Whether ``key`` is what calling an ``nn.Module`` runs: the ``forward`` (or ``__call__``)
        of a class of the project that derives from ``torch.nn.Module``, as far as its bases resolve."""
        class_name, _, method = key.qualname.rpartition(".")
        definition = self.files[key.file].facts.flow.defs.get(class_name)
        if method not in apis.INSTANCE_CALL_METHODS or definition is None or definition.kind != "class":
            return False
        return any(base[0] == "X" and base[1] in apis.MODULE_CLASSES for base in self._classes.mro(("C", key.file, class_name)))

    def function(self, key: FunctionKey) -> FunctionFacts:
        return self.files[key.file].facts.functions.get(key.qualname) or FunctionFacts(key.qualname)

    def calls_in(self, key: FunctionKey) -> list[int]:
        """The ordinals of the calls made in ``key``'s own body (each file's, sorted out when the
        first function of that file is asked about: a region walk reaches few of the files)."""
        sites = self._sites.get(key.file)
        if sites is None:
            sites = self._sites[key.file] = {}
            for ordinal, site in enumerate(self.files[key.file].facts.flow.calls):
                if site is not None:
                    sites.setdefault(site.scope, []).append(ordinal)
        return sites.get(key.qualname, [])

    def site(self, file: int, ordinal: int) -> CallSite | None:
        calls = self.files[file].facts.flow.calls
        return calls[ordinal] if ordinal < len(calls) else None

    def runs(self, file: int, ordinal: int) -> list[FunctionKey]:
        """The functions of the project that call ``ordinal`` of ``file`` runs (constructors'
        ``__init__`` aside: building a module is not running it)."""
        targets = self.graph.callees.get((file, ordinal), {})
        return [t for t, kind in targets.items() if isinstance(t, FunctionKey) and kind == "call"]

    @cached_property
    def _copied_sites(self) -> dict[tuple[int, int], list[str]]:
        """The sites in methods' copies per receiver class (``receiver_copies.py``) → the copies."""
        sites: dict[tuple[int, int], list[str]] = {}
        for key in self.graph.copies:
            if isinstance(key[0], int):
                sites.setdefault(key[:2], []).append(key[2])
        return sites

    def runs_in(self, file: int, ordinal: int, copy: str | None) -> list[tuple[FunctionKey, str]]:
        """``runs`` in one copy of the method the call is in (``receiver_copies.py``; ``""``: its
        own body; None: in any copy), each function with the copy it runs in."""
        copies = self._copied_sites.get((file, ordinal))
        if copies is None:
            return [(key, "") for key in self.runs(file, ordinal)] if not copy else []
        found: dict[tuple[FunctionKey, str], None] = {}
        for each in copies if copy is None else [copy]:
            for (target, target_copy), kind in self.graph.copies.get((file, ordinal, each), {}).items():
                if isinstance(target, FunctionKey) and kind == "call":
                    found[target, target_copy] = None
        return list(found)

    def entry_starts(self, file: int, entry: int) -> list[tuple[FunctionKey, str]]:
        """``entry_functions``, each with the copy of it the entry runs."""
        targets = self.graph.copies.get(("entry", file, entry))
        if targets is None:
            return [(key, "") for key in self.entry_functions(file, entry)]
        return [(t, c) for (t, c), kind in targets.items() if isinstance(t, FunctionKey) and kind == "call"]

    def called_functions(self, file: int, ordinal: int, copy: str | None) -> list[FunctionKey] | None:
        """The project functions call ``ordinal`` of ``file`` runs in ``copy`` (``runs_in``), when
        the call is resolved and calls nothing but project functions, each directly; else None:
        what it returns is not all in sight."""
        targets = self.targets(file, ordinal)
        if not targets or not self.resolved(file, ordinal):
            return None
        if any(not isinstance(target, FunctionKey) or kind != "call" for target, kind in targets.items()):
            return None
        return [callee for callee, _ in self.runs_in(file, ordinal, copy)]

    def targets(self, file: int, ordinal: int) -> dict[Target, str]:
        return self.graph.callees.get((file, ordinal), {})

    def resolved(self, file: int, ordinal: int) -> bool:
        return (file, ordinal) in self.graph.resolved

    def entry_functions(self, file: int, entry: int) -> list[FunctionKey]:
        return self.graph.entry_targets.get((file, entry), [])

    def entry_outside_names(self, file: int, entry: int) -> list[str]:
        """The outside names an entry hands over (``torch.compile(create_block_mask)``)."""
        return self.graph.entry_outside.get((file, entry), [])

    def dotted(self, key: FunctionKey) -> str:
        """``pkg.mod.Class.method``; a module's own code is the module's name."""
        module = self.files[key.file].module
        return module if key.qualname == MODULE_SCOPE else f"{module}.{key.qualname}"
