"""Classes as the solver sees them before any value flows: their bases and C3 MRO.

A base-class expression is resolved statically (from the names the files bind, their imports and
decorators, without running the graph), because the bases decide every attribute lookup the graph
makes. Relative import names are made absolute here too (``absolute_name``).
"""

from __future__ import annotations

from functools import cached_property

from graphlint.checks.facts import Expr, FileFacts
from graphlint.checks.value_graph import MAX_DEPTH, LinkedModule, Obj


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


def assigned_variables(facts: FileFacts) -> dict[str, list[Expr]]:
    """A file's variables with the values assigned to them."""
    assigned: dict[str, list[Expr]] = {}
    for target, value in facts.flow.assigns:
        if target[0] == "v":
            assigned.setdefault(target[1], []).append(value)
    return assigned


class ClassHierarchy:
    def __init__(self, files: list[LinkedModule], by_module: dict[str, list[int]], packages: set[str]) -> None:
        self.files = files
        self.by_module = by_module
        self.packages = packages
        # per file: variable → the values assigned to it
        self.assigned: list[dict[str, list[Expr]]] = [assigned_variables(linked.facts) for linked in files]
        self._mro: dict[Obj, list[Obj]] = {}

    @classmethod
    def of(cls, files: list[LinkedModule]) -> "ClassHierarchy":
        """The hierarchy of ``files``, indexed by module: which files each module name has, and
        every module and package name (namespace packages too)."""
        by_module: dict[str, list[int]] = {}
        packages: set[str] = set()
        for index, linked in enumerate(files):
            by_module.setdefault(linked.module, []).append(index)
            parts = linked.module.split(".")
            packages.update(".".join(parts[: i + 1]) for i in range(len(parts)))
        return cls(files, by_module, packages)

    @cached_property
    def derived(self) -> set[Obj]:
        """The project's classes that another class of the project derives from."""
        bases: set[Obj] = set()
        for file, linked in enumerate(self.files):
            for qualname, definition in linked.facts.flow.defs.items():
                if definition.kind == "class":
                    bases.update(self.mro(("C", file, qualname))[1:])
        return bases

    def mro(self, cls: Obj) -> list[Obj]:
        """C3 linearisation over the bases graphlint can name (project classes and outside names)."""
        found = self._mro.get(cls)
        if found is not None:
            return found
        self._mro[cls] = [cls]  # a cycle of bases ends here
        if cls[0] != "C":
            return [cls]
        bases = [b for expr in self.files[cls[1]].facts.flow.defs[cls[2]].bases for b in self.static(cls[1], expr)]
        bases = [b for b in dict.fromkeys(bases) if b[0] in ("C", "X") and b != cls]
        sequences = [list(self.mro(b)) for b in bases] + [list(bases)]
        order = [cls]
        while any(sequences):
            sequences = [s for s in sequences if s]
            head = next((s[0] for s in sequences if not any(s[0] in t[1:] for t in sequences)), sequences[0][0])
            order.append(head)
            sequences = [[c for c in s if c != head] for s in sequences]
        self._mro[cls] = order
        return order

    def static(self, file: int, expr: Expr, depth: int = 0) -> list[Obj]:
        """What a base-class expression names, without running the graph (bases decide lookups)."""
        if depth > MAX_DEPTH:
            return []
        kind = expr[0]
        if kind == "d":
            definition = self.files[file].facts.flow.defs.get(expr[1])
            return [("C", file, expr[1])] if definition is not None and definition.kind == "class" else []
        if kind == "v":
            return [o for value in self.assigned[file].get(expr[1], ()) for o in self.static(file, value, depth + 1)]
        if kind == "r":
            decorations = self.files[file].facts.flow.decorations
            return self.static(file, decorations[expr[1]].value, depth + 1) if expr[1] < len(decorations) else []
        if kind == "x":
            return [("X", f"builtins.{expr[1]}")]
        if kind == "g":
            linked = self.files[file]
            return self.static_dotted(absolute_name(expr[1], linked.module, linked.is_package), depth + 1)
        if kind == "a":
            return [o for base in self.static(file, expr[1], depth + 1) for o in self.static_attribute(base, expr[2], depth + 1)]
        return []

    def static_dotted(self, name: str, depth: int) -> list[Obj]:
        parts = name.split(".")
        for split in range(len(parts), 0, -1):
            module = ".".join(parts[:split])
            if module in self.packages:
                found: list[Obj] = [("M", module)]
                for attr in parts[split:]:
                    found = [o for base in found for o in self.static_attribute(base, attr, depth + 1)]
                return found
        return [("X", name)]

    def static_attribute(self, obj: Obj, name: str, depth: int) -> list[Obj]:
        key = (obj[1], f"{obj[2]}.{name}") if obj[0] == "C" else None
        if obj[0] == "M":  # what the module binds to the name, else its submodule of that name
            bound = [o for file in self.by_module.get(obj[1], ()) for o in self.static(file, ["v", name], depth + 1)]
            submodule = f"{obj[1]}.{name}"
            return bound or ([("M", submodule)] if submodule in self.packages else [])
        if key is not None:
            return self.static(key[0], ["v", key[1]], depth + 1)
        if obj[0] == "X":
            return [("X", f"{obj[1]}.{name}")]
        return []
