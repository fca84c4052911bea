"""Wrappers an override adds after the method it overrides ran: what that method wrapped never
held them.

``self.model = Wrapper(self.model)`` hands ``Wrapper`` what ``self.model`` held before
(``call_semantics.before_rebinding``), but the graph does not follow the order of statements, so
"before" is every value but this call's own instances. A subclass that calls the method it
overrides and then wraps again (vllm-ascend's runner: ``super().load_model()``, then
``self.model = XliteWrapper(self.model)``) made the base's ``ACLGraphWrapper(self.model)`` capture
the ``XliteWrapper`` that is only made after it. Here the override's wrapper classes are left out
of the base method's rebinding, in that method's copy for the overriding class and its
subclasses (``receiver_copies.py``), the only receivers for which the order is known.
"""

from __future__ import annotations

from functools import cached_property

from graphlint.checks.class_hierarchy import ClassHierarchy
from graphlint.checks.facts import Expr
from graphlint.checks.file_tables import per_file
from graphlint.checks.value_graph import LinkedModule, Obj


def instances_made(classes: ClassHierarchy, file: int, callee: Expr) -> set[Obj]:
    """What calling ``callee`` makes, as far as its static name says: instances of the project
    classes it names, or the outside names themselves."""
    return {("I", o[1], o[2]) if o[0] == "C" else o for o in classes.static(file, callee) if o[0] in ("C", "X")}


class WrapOrder:
    """A mixin of the solver: ``made_later`` for a rebinding call in a method's copy."""

    files: list[LinkedModule]
    classes: ClassHierarchy
    declared: list[set[str]]

    @per_file
    def wrapping_after_super(self, file: int) -> list[tuple[tuple[int, str], Obj, set[Obj]]]:
        """Per file, its rebinding calls after ``super().<method>()``: (file, qualname of the
        overridden method), the overriding class, the instances the call makes."""
        linked = self.files[file]
        found: list[tuple[tuple[int, str], Obj, set[Obj]]] = []
        for site in linked.facts.flow.calls:
            if site is None or site.after_super is None or not site.rebinds or site.callee is None:
                continue
            owner, _, method = site.scope.rpartition(".")
            klass: Obj = ("C", file, owner)
            if linked.facts.flow.defs.get(owner) is None or linked.facts.flow.defs[owner].kind != "class":
                continue
            made = instances_made(self.classes, file, site.callee)
            overridden = next(
                (b for b in self.classes.mro(klass)[1:] if b[0] == "C" and f"{b[2]}.{method}" in self.declared[b[1]]), None
            )
            if made and overridden is not None:
                found.append(((overridden[1], f"{overridden[2]}.{method}"), klass, made))
        return found

    @cached_property
    def _wrapped_after_super(self) -> dict[tuple[int, str], list[tuple[Obj, set[Obj]]]]:
        """(file, qualname of the overridden method) → (overriding class, instances its
        rebinding calls after ``super().<method>()`` make)."""
        found: dict[tuple[int, str], list[tuple[Obj, set[Obj]]]] = {}
        for row in self.wrapping_after_super:
            for overridden, klass, made in row:
                found.setdefault(overridden, []).append((klass, made))
        return found

    def made_later(self, file: int, scope: str, receiver_class: Obj | None) -> set[Obj]:
        """What overrides of ``scope`` wrap after calling it, for a receiver of ``receiver_class``
        (None: the shared copy, whose receivers are not known: nothing)."""
        if receiver_class is None:
            return set()
        later = self._wrapped_after_super.get((file, scope), ())
        mro = self.classes.mro(receiver_class) if later else []
        return {o for klass, made in later if klass in mro for o in made}
