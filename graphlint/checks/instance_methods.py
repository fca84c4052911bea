"""Methods stored on one instance (``module.forward = forward``): that instance's, not its class's.

The graph has one instance per class (``("I", file, qualname)``), and ``obj.name = value`` goes
to the class's attribute, read through every instance of it. For data that is the graph's field
sensitivity by namespace; for a method it is a merge: sglang's CPU offloader
(``utils/offloader.py``) replaces ``forward`` on the layers ``make_layers`` builds, and every
other instance of those classes (a vision merger's ``ColumnParallelLinear``) then ran the
offloader's ``forward`` too. So the solve runs twice where it must (``valueflow.solve_kept``):
the first run notes the classes whose instances had a method stored on them (``patched``); the
second tells apart the instances of those made at two call sites or more (``told_apart``) by the
call that made them (``("I", file, qualname, site)``, ``tagged``), keeps a method stored on such
an instance with it, and reads it back only through that instance. A class made at one site has
one instance to tell apart, and the class's one instance reads all that was stored on it: the
first run's values already (vLLM's decoder layers, each made in its model's ``make_layers``), so
where no patched class is made twice the first run is the answer. The class's one instance (a
method's ``self``: methods are bound to it, an annotation's type) stands for any instance: it
reads what was stored on every one of them, and a method stored on it goes to the class, read by
all. Other attributes stay the class's. The second run only tells more apart than the first (its
stores of methods are a subset of the first's), so it notes no class to tell apart the first
missed; ``incremental_solve.py`` does not extend a kept solve where an added fact makes one more
class to tell apart (a method stored on an instance of a class made twice, or a second site
making a patched class).
"""

from __future__ import annotations

from typing import Any

from graphlint.checks.class_hierarchy import ClassHierarchy
from graphlint.checks.value_graph import LinkedModule, Obj, ValueGraph


def any_instance(obj: Obj) -> Obj:
    """The class's one instance for an instance made at a call; anything else itself."""
    return obj[:3] if obj[0] == "I" else obj


class InstanceMethods(ValueGraph):
    """Methods stored on instances (a mixin of the solver)."""

    files: list[LinkedModule]
    classes: ClassHierarchy
    # classes (file, qualname) whose instances are told apart by the call that made them
    tagged: frozenset[tuple[int, str]]
    # classes (file, qualname) whose instances had one of their methods stored on them
    patched: set[tuple[int, str]]
    # (a tagged instance, name) → what was stored as the method ``name`` on that instance;
    # (the class's one instance, name) → what was stored on any of them
    instance_methods: dict[tuple[Obj, str], int]
    called: set[tuple[Any, Obj]]  # (site, what it calls): a class called is an instance made
    bind_member: Any

    def told_apart(self) -> frozenset[tuple[int, str]]:
        """The patched classes made at two call sites or more: those whose instances a solve
        tells apart (``tagged``)."""
        sites: dict[tuple[int, str], set[Any]] = {}
        if self.patched:
            for site, obj in self.called:
                if obj[0] == "C" and (obj[1], obj[2]) in self.patched:
                    sites.setdefault((obj[1], obj[2]), set()).add(site)
        return frozenset(cls for cls, made in sites.items() if len(made) > 1)

    def allocated(self, site: Any, cls: Obj) -> Obj:
        """The instance a call of ``cls`` at ``site`` makes."""
        return ("I", cls[1], cls[2], site) if (cls[1], cls[2]) in self.tagged else ("I", cls[1], cls[2])

    def stored_method(self, obj: Obj, name: str, value: int) -> bool:
        """``obj.name = value`` where ``name`` is a method of ``obj``'s class: True where it is kept
        with ``obj``, a tagged instance (else it goes to the class, as any attribute)."""
        if obj[0] != "I" or not self._is_method(obj, name):
            return False
        self.patched.add((obj[1], obj[2]))
        if len(obj) == 3:
            return False
        self.edge(value, self._stored(obj, name))
        self.edge(value, self._stored(obj[:3], name))  # what any instance of the class may run
        return True

    def stored_methods(self, receiver: Obj, name: str, out: int) -> None:
        """What was stored as the method ``name`` on ``receiver`` (an instance) into ``out``: its
        own, or for the class's one instance, what was stored on any."""
        if (receiver[1], receiver[2]) in self.tagged and self._is_method(receiver, name):
            self.watch(self._stored(receiver, name), lambda objs: self.bind_member(objs, receiver, out))

    def _stored(self, obj: Obj, name: str) -> int:
        node = self.instance_methods.get((obj, name))
        if node is None:
            node = self.instance_methods[obj, name] = self.node()
        return node

    def _is_method(self, instance: Obj, name: str) -> bool:
        """A function the class body of a class of the instance's MRO defines as ``name``."""
        for klass in self.classes.mro(("C", instance[1], instance[2])):
            if klass[0] == "C":
                definition = self.files[klass[1]].facts.flow.defs.get(f"{klass[2]}.{name}")
                if definition is not None:
                    return definition.kind == "function"
        return False
