"""The facts of all files → one project: module names, and refs resolved to functions.

A ref (see ``facts.py``) is resolved in the file it was written in: first the file's own
definitions and module-level bindings, then its imports (relative ones against its package),
then modules of the project by dotted name, following re-exports (``from .impl import norm`` in
an ``__init__.py``). Calling a class instance reaches its ``forward`` (or ``__call__``), looked up
through base classes, and calling what a factory function returned reaches what its ``return``
statements build; ``self.block(...)`` reaches a method of that name or, failing that, the
submodules assigned to ``self.block``. A framework's dispatch (``Project.dispatch``) adds the
methods an instance call runs besides ``forward``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from graphlint.checks.facts import MODULE_SCOPE, ClassFacts, FileFacts, FunctionFacts, Ref
from graphlint.checks.presets import glob_pattern

_MAX_DEPTH = 12  # re-export chains and alias loops end here
_INSTANCE_CALL_METHODS = ("forward", "__call__")


@dataclass(frozen=True)
class FunctionKey:
    file: int  # index into Project.files
    qualname: str


@dataclass
class LinkedFile:
    path: Path
    display: str  # the path as reported (relative to the working directory when possible)
    module: str
    is_package: bool
    facts: FileFacts


@dataclass
class Project:
    files: list[LinkedFile]
    # Class (dotted name, globs) → methods that calling an instance runs besides ``forward``:
    # a framework's dispatch (vLLM's ``CustomOp`` → ``forward_oot``), from presets and config.
    dispatch: dict[str, tuple[str, ...]] = field(default_factory=dict)
    _by_module: dict[str, list[int]] = field(default_factory=dict)
    _resolved: dict[tuple[int, tuple[str, ...], ClassKey | None], list[Callee]] = field(default_factory=dict)
    _expanding: set[FunctionKey] = field(default_factory=set)  # factories being expanded now

    def __post_init__(self) -> None:
        for index, file in enumerate(self.files):
            self._by_module.setdefault(file.module, []).append(index)
        self._dispatch = [(glob_pattern(name), methods) for name, methods in self.dispatch.items()]

    def function(self, key: FunctionKey) -> FunctionFacts:
        return self.files[key.file].facts.functions[key.qualname]

    # ---- refs → functions -------------------------------------------------------------------
    def resolve(self, file: int, ref: Ref, self_class: ClassKey | None = None) -> list[Callee]:
        """The functions that calling ``ref`` (written in ``file``) may run. ``self_class`` is
        the class of ``self`` where the caller is a method run on an instance: ``self.block``
        in ``Base.forward`` of a ``Model(Base)`` is looked up on ``Model``."""
        key = (file, tuple(ref), self_class)
        found = self._resolved.get(key)
        if found is None:
            found = self._resolved[key] = list(dict.fromkeys(self._resolve_ref(file, ref, self_class, 0)))
        return found

    def _resolve_ref(self, file: int, ref: Ref, self_class: ClassKey | None, depth: int) -> list[Callee]:
        if depth > _MAX_DEPTH:
            return []
        kind = ref[0]
        if kind == "local":  # a nested function: it shares the enclosing method's ``self``
            return [Callee(FunctionKey(file, ref[1]), self_class)] if ref[1] in self.files[file].facts.functions else []
        if kind == "call":
            found: list[Callee] = []
            for target in self._lookup(file, ref[1], depth):
                if isinstance(target, FunctionKey):
                    found.append(Callee(target, None))
                elif isinstance(target, _Binding):
                    for inner in target.refs:
                        found.extend(self._resolve_ref(target.file, inner, None, depth + 1))
            return found  # a class called by name is constructed: __init__ is not traced code
        if kind == "instance":
            found = []
            for target in self._lookup(file, ref[1], depth):
                if isinstance(target, _Class):
                    methods = self._method(target, _INSTANCE_CALL_METHODS, depth)[:1]
                    methods += self._dispatched(target, depth)
                    found.extend(Callee(method, target.key) for method in methods)
                elif isinstance(target, FunctionKey):  # a factory: what it returns is called
                    found.extend(self._returned(target, None, depth))
            return found
        if kind == "member-result":  # self.build_model(): what that method returns is called
            found = []
            for cls in self._receivers(file, ref[1], self_class, depth):
                for method in self._method(cls, (ref[2],), depth):
                    found.extend(self._returned(method, cls.key, depth))
            return found
        if kind == "member":
            found = []
            for cls in self._receivers(file, ref[1], self_class, depth):
                methods = self._method(cls, (ref[2],), depth)
                if methods:
                    found.append(Callee(methods[0], cls.key))
                    continue
                for owner, refs in self._member_refs(cls, ref[2], depth):
                    for inner in refs:
                        found.extend(self._resolve_ref(owner, inner, None, depth + 1))
            return found
        return []

    def _returned(self, function: FunctionKey, self_class: ClassKey | None, depth: int) -> list[Callee]:
        """What calling the objects ``function`` returns calls. A recursive factory
        (``return f(n - 1)``) is expanded once per resolution, so the result does not depend on
        the order in which refs are resolved."""
        if function in self._expanding:
            return []
        self._expanding.add(function)
        try:
            return [
                callee
                for inner in self.function(function).returns
                for callee in self._resolve_ref(function.file, inner, self_class, depth + 1)
            ]
        finally:
            self._expanding.discard(function)

    def _receivers(self, file: int, dotted: str, self_class: ClassKey | None, depth: int) -> list[_Class]:
        """The classes ``self.x`` is looked up on: the instance's own class when it is known and
        derives from the class the code was written in, else that class."""
        written_in = self._classes(file, dotted, depth)
        if self_class is not None:
            actual = _Class(self_class.file, self.files[self_class.file].facts.classes[self_class.qualname])
            if any(c.key in {k.key for k in written_in} for c in self._mro(actual, depth)):
                return [actual]
        return written_in

    def _classes(self, file: int, dotted: str, depth: int) -> list[_Class]:
        return [t for t in self._lookup(file, dotted, depth) if isinstance(t, _Class)]

    def _lookup(self, file: int, dotted: str, depth: int) -> list[FunctionKey | _Class | _Binding]:
        """What a dotted name means in ``file``."""
        if depth > _MAX_DEPTH:
            return []
        linked = self.files[file]
        facts = linked.facts
        if dotted.startswith("."):
            return self._lookup_absolute(self._absolute(linked, dotted), depth + 1, near=file)
        if dotted in facts.functions and dotted != MODULE_SCOPE:
            return [FunctionKey(file, dotted)]
        if dotted in facts.classes:
            return [_Class(file, facts.classes[dotted])]
        head, dot, rest = dotted.partition(".")
        if head in facts.bindings and not rest:
            return [_Binding(file, facts.bindings[head])]
        if head in facts.classes and rest:  # Outer.Inner / Model.forward written in this file
            return [_Class(file, facts.classes[dotted])] if dotted in facts.classes else []
        imported = facts.imports.get(head)
        if imported is not None and imported != dotted:
            target = imported + dot + rest
            if target.startswith("."):
                target = self._absolute(linked, target)
            return self._lookup_absolute(target, depth + 1, near=file)
        return self._lookup_absolute(dotted, depth + 1, near=file)

    def _lookup_absolute(self, dotted: str, depth: int, near: int) -> list[FunctionKey | _Class | _Binding]:
        parts = dotted.split(".")
        for split in range(len(parts) - 1, 0, -1):
            module, rest = ".".join(parts[:split]), ".".join(parts[split:])
            for index in self._modules(module, near):
                found = self._lookup(index, rest, depth + 1)
                if found:
                    return found
        return []

    def _modules(self, module: str, near: int) -> list[int]:
        """Files of ``module``; when several files claim the name (scripts in different
        directories), the one nearest to the importing file first."""
        indices = self._by_module.get(module, [])
        if len(indices) <= 1:
            return indices
        here = self.files[near].path.parent.parts
        return sorted(indices, key=lambda i: -_common_prefix(self.files[i].path.parent.parts, here))

    @staticmethod
    def _absolute(linked: LinkedFile, relative: str) -> str:
        return absolute_name(relative, linked.module, linked.is_package)

    def _mro(self, cls: _Class, depth: int) -> list[_Class]:
        order: list[_Class] = []
        stack = [cls]
        while stack and len(order) < 64:
            current = stack.pop(0)
            if any(c.key == current.key for c in order):
                continue
            order.append(current)
            for base in current.facts.bases:
                stack.extend(self._classes(current.file, base, depth + 1))
        return order

    def _method(self, cls: _Class, names: tuple[str, ...], depth: int) -> list[FunctionKey]:
        for klass in self._mro(cls, depth):
            functions = self.files[klass.file].facts.functions
            for name in names:
                qualname = f"{klass.facts.qualname}.{name}"
                if qualname in functions:
                    return [FunctionKey(klass.file, qualname)]
        return []

    def _dispatched(self, cls: _Class, depth: int) -> list[FunctionKey]:
        """The dispatch methods an instance of ``cls`` runs: those named for a class in its
        MRO, by its own dotted name or by a base's as written (a base outside the project)."""
        if not self._dispatch:
            return []
        names = []
        for klass in self._mro(cls, depth):
            linked = self.files[klass.file]
            names.append(f"{linked.module}.{klass.facts.qualname}")
            names.extend(absolute_name(base, linked.module, linked.is_package) for base in klass.facts.bases)
        wanted = dict.fromkeys(
            method for pattern, methods in self._dispatch if any(pattern.match(n) for n in names) for method in methods
        )
        return [key for method in wanted for key in self._method(cls, (method,), depth)]

    def _member_refs(self, cls: _Class, name: str, depth: int) -> list[tuple[int, list[Ref]]]:
        return [
            (klass.file, klass.facts.members[name])
            for klass in self._mro(cls, depth)
            if name in klass.facts.members
        ]


@dataclass(frozen=True)
class ClassKey:
    file: int
    qualname: str


@dataclass(frozen=True)
class Callee:
    """A function a call may run, and the class of ``self`` in it when it runs as a method."""

    function: FunctionKey
    self_class: ClassKey | None


@dataclass(frozen=True)
class _Class:
    file: int
    facts: ClassFacts

    @property
    def key(self) -> ClassKey:
        return ClassKey(self.file, self.facts.qualname)


@dataclass(frozen=True)
class _Binding:
    file: int
    refs: list[Ref]


def module_name(path: Path) -> tuple[str, bool]:
    """``pkg/sub/mod.py`` → ``pkg.sub.mod`` (climbing while ``__init__.py`` exists), and
    whether the file is a package's ``__init__``."""
    path = path.resolve()
    is_package = path.name == "__init__.py"
    parts = [] if is_package else [path.stem]
    directory = path.parent
    while (directory / "__init__.py").exists() and directory.parent != directory:
        parts.append(directory.name)
        directory = directory.parent
    return ".".join(reversed(parts)) or path.parent.name, is_package


def absolute_name(name: str, module: str, is_package: bool) -> str:
    """``.helpers.norm`` written in ``pkg.model`` → ``pkg.helpers.norm`` (absolute names pass)."""
    level = len(name) - len(name.lstrip("."))
    if level == 0:
        return name
    package = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        package = package[: len(package) - (level - 1)]
    rest = name[level:]
    return ".".join([*package, rest] if rest else package)


def _common_prefix(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n
