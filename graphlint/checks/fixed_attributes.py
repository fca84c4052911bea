"""Which functions a call of ``self.B(...)`` runs, under the tests on other ``self`` attributes the
walk has passed to reach it, for the regions walk (the walk wrote the tests down: ``self_tests.py``).

``Gemma3RotaryEmbedding.__init__`` sets ``self.rope_type`` and then ``self.rope_init_fn =
self.compute_default_rope_parameters`` only under ``if self.rope_type == "default":`` (else a
function of ``transformers``' ``ROPE_INIT_FUNCTIONS``); ``forward`` calls
``self._dynamic_frequency_update(...)`` only under ``if "dynamic" in self.rope_type:``, and there
``self.rope_init_fn(...)`` never runs ``compute_default_rope_parameters``.

An attribute ``A`` is *fixed* where every store of it on an instance is made in one ``__init__``
(of the classes an instance runs: ``Project.instance_classes``), in no loop, nothing else stores
it (no store on another object, ``setattr``, ``register_buffer``, ``__dict__``, a class-body
binding, a method of that name; nor ``torch.nn.Module``, whose ``train()`` stores ``training``):
once built, an instance's ``A`` is what ``__init__`` left. A call ``self.m(...)`` made under tests
of fixed attributes hands them to ``m`` (an instance method: the same ``self``), and on through its
own ``self.`` calls; at a call ``self.B(...)`` the tests handed in and those around the call meet
each store of ``B``: a store in that ``__init__`` under a test of ``A`` made after all of ``A``'s
stores (its line after theirs) holds only where its test does. A store whose tests cannot hold
with the call's (``"dynamic" in A`` against ``A == "default"``, judged exactly on constants:
equality with a constant is taken to make ``A`` that constant, as for a ``str``) never gives the
call its value. The call's functions are then kept only where some other store may hold them:
``self.m`` (a method ``m`` of those classes, where no store rebinds ``m``) and a name outside the
project (or an attribute or element of one: it holds no project function, as the value flow
takes it); a store of any other form keeps every function. Assumed: ``self`` is an instance of
the method's class (no ``Class.method(other, ...)``), and code outside the project stores no
such attribute by a name it computes (``setattr(obj, name, v)`` on an object that is not
``self``).
"""

from __future__ import annotations

from typing import Any

from graphlint.checks.facts import Expr
from graphlint.checks.link import Project
from graphlint.checks.value_graph import FunctionKey, Obj

Atom = tuple[str, str, Any]  # ("eq" | "has" | "in", attribute, constant or tuple of them)
Test = tuple[Atom, bool]  # an atom and whether it holds
Tests = frozenset[Test]
NO_TESTS: Tests = frozenset()
# Outside bases whose own code stores no attribute of an instance but these
# (``torch/nn/modules/module.py``: ``Module.__init__`` sets ``training`` and ``_``-prefixed
# dicts, ``Module.train()`` sets ``training``)
_KNOWN_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module", "builtins.object"})
_BASE_STORED = frozenset({"training"})
_INIT = "__init__"


class FixedAttributes:
    """What the project's facts say of ``self`` attributes fixed at construction (above)."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self._classes: dict[tuple[int, str], list[Obj] | None] = {}
        self._fixed: dict[tuple[int, str, str], tuple[tuple[int, str], int] | None] = {}
        self._dynamic: set[str] | None = None

    def own(self, file: int, ordinal: int) -> Tests:
        """The tests around call ``ordinal`` of ``file`` on its method's ``self`` attributes."""
        listed = self.project.files[file].facts.flow.self_call_tests.get(ordinal)
        return frozenset((_atom(atom), holds) for atom, holds, *_ in listed) if listed else NO_TESTS

    def handed(self, file: int, ordinal: int, callee: FunctionKey, tests: Tests) -> Tests:
        """What call ``ordinal`` of ``file``, made under ``tests``, hands ``callee``: the tests of
        fixed attributes, where the call is ``self.m(...)`` and ``callee`` a method ``m`` of the
        instance's classes (``m`` no attribute stored on it: the same ``self``)."""
        method = self._self_attribute_call(file, ordinal) if tests else None
        site = self.project.site(file, ordinal)
        caller = _owner(self.project, FunctionKey(file, site.scope)) if method is not None and site is not None else None
        owner = _owner(self.project, callee)
        if caller is None or owner is None or method is None or callee.qualname.rpartition(".")[2] != method:
            return NO_TESTS
        if callee not in (self._held(file, caller, ["m", method]) or ()):
            return NO_TESTS
        return frozenset(test for test in tests if self.fixed(callee.file, owner, test[0][1]) is not None)

    def dropped(self, file: int, ordinal: int, tests: Tests) -> frozenset[FunctionKey]:
        """The functions call ``ordinal`` of ``file`` (``self.B(...)``) cannot run under ``tests``
        (those handed in and its own)."""
        attribute = self._self_attribute_call(file, ordinal) if tests else None
        site = self.project.site(file, ordinal)
        owner = _owner(self.project, FunctionKey(file, site.scope)) if attribute is not None and site is not None else None
        if owner is None or attribute is None:
            return frozenset()
        classes = self.classes(file, owner)
        stores = self._stores(file, owner, attribute)
        if classes is None or stores is None:
            return frozenset()
        called = {test for test in tests if self.fixed(file, owner, test[0][1]) is not None}
        kept: set[FunctionKey] = set()
        excluded = False
        for store_file, (function, _, _, form, around) in stores:
            store_tests = {
                (_atom(atom), holds) for atom, holds, line in around
                if (fixed := self.fixed(file, owner, atom[1])) is not None and fixed[0] == (store_file, function) and fixed[1] < line
            }
            if not consistent(called | store_tests):
                excluded = True
                continue
            held = self._held(file, owner, form)
            if held is None:
                return frozenset()
            kept |= held
        if not excluded:
            return frozenset()
        targets = {target for target in self.project.targets(file, ordinal) if isinstance(target, FunctionKey)}
        return frozenset(targets - kept)

    def classes(self, file: int, owner: str) -> list[Obj] | None:
        """``Project.instance_classes`` of ``owner``, None also where one is an outside class
        whose code may store attributes."""
        if (file, owner) not in self._classes:
            found = self.project.instance_classes(("C", file, owner))
            self._classes[file, owner] = None if found is None or any(
                c[0] != "C" and c[1] not in _KNOWN_BASES for c in found
            ) else found
        return self._classes[file, owner]

    def fixed(self, file: int, owner: str, attribute: str) -> tuple[tuple[int, str], int] | None:
        """Where ``attribute`` of ``owner``'s instances is fixed: the ``__init__`` that stores
        it (its file and name), and the line of its last store; None where it is not fixed."""
        key = (file, owner, attribute)
        if key not in self._fixed:
            stores = self._stores(file, owner, attribute)
            functions = {(store_file, store[0]) for store_file, store in stores or ()}
            found = None
            if stores and len(functions) == 1 and not any(store[2] for _, store in stores):
                function = functions.pop()
                if function[1].rpartition(".")[2] == _INIT:
                    found = (function, max(store[1] for _, store in stores))
            self._fixed[key] = found
        return self._fixed[key]

    def _stores(self, file: int, owner: str, attribute: str, method: bool = False) -> list[tuple[int, list[Any]]] | None:
        """Every store of ``attribute`` on an instance of ``owner``, with its file
        (``FlowFacts.self_stores``); None where some store is not
        in sight, or (unless ``method``: asked of a method's name) a function of that name may
        stand for it (a property's setter stores elsewhere)."""
        classes = self.classes(file, owner)
        if classes is None or attribute in _BASE_STORED or attribute in self.project.foreign_stores:
            return None
        dynamic = self._dynamic_names()
        if attribute in dynamic:
            return None
        stores: list[tuple[int, list[Any]]] = []
        for cls in classes:
            if cls[0] != "C":
                continue
            flow = self.project.files[cls[1]].facts.flow
            if f"{cls[2]}.*" in dynamic or (not method and f"{cls[2]}.{attribute}" in flow.defs):
                return None
            stores.extend((cls[1], store) for store in flow.self_stores.get(f"{cls[2]}.{attribute}", ()))
        return stores

    def _dynamic_names(self) -> set[str]:
        if self._dynamic is None:
            self._dynamic = {name for linked in self.project.files for name in linked.facts.flow.dynamic_stores}
        return self._dynamic

    def _held(self, file: int, owner: str, form: Expr) -> set[FunctionKey] | None:
        """The project functions a store of this form may put in the attribute; None: any."""
        if form[0] == "o":
            return set() if self.project.outside_name(form[1]) else None
        if form[0] != "m" or self._stores(file, owner, form[1], method=True) != []:
            return None
        held: set[FunctionKey] = set()
        for cls in self.classes(file, owner) or ():
            if cls[0] != "C":
                continue
            flow = self.project.files[cls[1]].facts.flow
            name = f"{cls[2]}.{form[1]}"
            definition = flow.defs.get(name)
            if definition is None:
                continue
            # a decorated method is what its decorator returns (``staticmethod`` and friends aside)
            if definition.kind != "function" or definition.method == "property" or any(
                d.value == ["d", name] for d in flow.decorations
            ):
                return None
            held.add(FunctionKey(cls[1], name))
        return held

    def _self_attribute_call(self, file: int, ordinal: int) -> str | None:
        """``B`` of a call ``self.B(...)`` made in an instance method (on its own ``self``)."""
        site = self.project.site(file, ordinal)
        if site is None or site.callee is None or site.callee[0] != "a":
            return None
        definition = self.project.files[file].facts.flow.defs.get(site.scope)
        if definition is None or definition.method != "instance" or not definition.params:
            return None
        return site.callee[2] if site.callee[1] == ["v", f"{site.scope}.{definition.params[0][0]}"] else None


def _owner(project: Project, method: FunctionKey) -> str | None:
    """The class of an instance method."""
    flow = project.files[method.file].facts.flow
    definition = flow.defs.get(method.qualname)
    owner = method.qualname.rpartition(".")[0]
    cls = flow.defs.get(owner)
    if definition is None or definition.method != "instance" or cls is None or cls.kind != "class":
        return None
    return owner


def _atom(atom: list[Any]) -> Atom:
    kind, attribute, value = atom
    return (kind, attribute, tuple(value) if kind == "in" else value)


def consistent(tests: set[Test] | Tests) -> bool:
    """Whether some value of each attribute makes every test what it says (unsure: True). An
    attribute equal to a constant, or one of a tuple of them, is judged on those constants."""
    by_attribute: dict[str, list[Test]] = {}
    for test in tests:
        by_attribute.setdefault(test[0][1], []).append(test)
    return all(_satisfiable(listed) for listed in by_attribute.values())


def _satisfiable(tests: list[Test]) -> bool:
    # the attribute is one of the constants of each test that holds of ``eq`` / ``in``: those of
    # all of them are enough to try
    candidates = [c for (kind, _, value), holds in tests if holds and kind in ("eq", "in") for c in ([value] if kind == "eq" else value)]
    if not any(holds and kind in ("eq", "in") for (kind, _, _), holds in tests):
        return True
    return any(all(_evaluate(atom, candidate) in (holds, None) for atom, holds in tests) for candidate in candidates)


def _evaluate(atom: Atom, value: Any) -> bool | None:
    """The atom for the attribute ``value`` (None: not judged)."""
    kind, _, constant = atom
    if kind == "eq":
        return value == constant
    if kind == "in":
        return value in constant
    return constant in value if isinstance(value, str) else None
