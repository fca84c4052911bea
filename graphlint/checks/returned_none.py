"""What a helper returns while a framework's graph runner captures, and the branches of its
callers that this decides.

sglang's MOSS-VL model collects the batch's images in a helper that, for a capture batch, returns
``None, None, None`` (``if forward_mode.is_decode() or all(forward_batch.encoder_cached): return
None, None, None``; in the other modes its ``for ... in enumerate(forward_batch.mm_inputs):``
raises, mm_inputs being None), and ``forward`` runs the vision encoder only under ``if
pixel_values is not None and grid_thw is not None:``. A mixin of the extractor's walk:

- each ``return`` a capture can run (``capture_values.py``: some mode left) is read for what is
  None in it: the whole value (``return``, ``return None``, a capture-None attribute or name), or
  elements of a tuple display. Per function (a plain ``def``: no decorator, not async, no
  ``yield``), ``FileFacts.none_returns`` keeps what is None in every such return: ``[-1]`` for
  the whole value (then an unpacking raises: every element too), else the elements' indices.
  Falling off the end returns None, which says the same;
- a name bound once in its function, to a call (``x = f()``) or an element of one
  (``a, b = self.f()``), stands for "what call ``ordinal`` returns (element ``index``)";
- an ``if`` on such names that a capture does not decide otherwise walks its body (``x is not
  None``, ``x``, an ``and`` with one) or its ``else`` and what follows ``if x is None: return``
  (``x is None``, ``not x``, an ``or`` with one) under *assumptions*: the calls made there are
  not captured if one of those returns is None in every capture (``FileFacts.uncaptured_unless``).

Which functions a call runs is known only once the project is linked: the regions walk decides
(``none_returns.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import libcst as cst

from graphlint.checks.capture_values import Modes
from graphlint.checks.facts import WHOLE_RETURN as WHOLE, FileFacts
from graphlint.checks.returned_elements import ElementAssumption

# (call ordinal, element index; WHOLE: the whole value): "what that call returns is None here"
Returned = tuple[int, int]
# what leaves code uncaptured: a return None (above), or a parameter's element (returned_elements.py)
Assumption = Returned | ElementAssumption


class ReturnedNone:
    """The return half of the extractor (it provides the scopes, ``capture_modes``,
    ``ordinals`` and ``_none_modes``)."""

    facts: FileFacts
    function_scope: Any
    capture_modes: Modes
    ordinals: dict[int, tuple[str, int]]
    _none_modes: Callable[[cst.BaseExpression, Modes], Modes | None]
    element_unless: Callable[[cst.BaseExpression, bool], frozenset[ElementAssumption]]  # returned_elements.py
    unread_returns: set[str]  # functions whose returns are not read (decorated, async, generators)
    # the code here is not captured if one of these holds in every capture
    captured_unless: frozenset[Assumption]

    def _start_returns(self, node: cst.FunctionDef, qualname: str) -> None:
        """A plain ``def`` whose returns are read; a second def of the name must be one too."""
        if node.decorators or node.asynchronous is not None:
            self._unread(qualname)
        elif qualname not in self.unread_returns:
            self.facts.none_returns.setdefault(qualname, [WHOLE])

    def _unread(self, qualname: str) -> None:
        self.unread_returns.add(qualname)
        self.facts.none_returns.pop(qualname, None)

    def _on_yield(self, node: cst.CSTNode) -> None:
        """A generator returns a generator: its returns say nothing."""
        self._unread(self.function_scope.qualname)

    def _on_return(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.Return)
        scope = self.function_scope
        known = self.facts.none_returns.get(scope.qualname)
        if scope.kind != "function" or known is None or not self.capture_modes:
            return
        value = node.value
        if value is None or self._always_none(value):
            return  # None: every element too (unpacking it raises)
        elements = value.elements if isinstance(value, cst.Tuple) else None
        if elements is None or any(isinstance(e, cst.StarredElement) for e in elements):
            self.facts.none_returns[scope.qualname] = []
            return
        none = {index for index, element in enumerate(elements) if self._always_none(element.value)}
        self.facts.none_returns[scope.qualname] = sorted(none if known == [WHOLE] else none & set(known))

    def _always_none(self, expr: cst.BaseExpression) -> bool:
        """``None``, or None in every mode a capture runs here."""
        if isinstance(expr, cst.Name) and expr.value == "None":
            return True
        return self._none_modes(expr, self.capture_modes) == self.capture_modes

    def _note_returned(self, scope: Any, targets: list[cst.BaseExpression], value: cst.BaseExpression) -> None:
        """``x = f()``, ``a, b = self.f()``: the names that stand for what the call returns, where
        this is their only binding in the function (asked when one is tested: ``_returned``)."""
        if scope.kind != "function" or not isinstance(value, cst.Call) or len(targets) != 1:
            return
        ordinal = self.ordinals[id(value)][1]
        target = targets[0]
        if isinstance(target, cst.Name):
            named = [(target.value, WHOLE, True)]
        elif isinstance(target, (cst.Tuple, cst.List)) and all(isinstance(e, cst.Element) for e in target.elements):
            named = [(e.value.value, i, False) for i, e in enumerate(target.elements) if isinstance(e.value, cst.Name)]
        else:
            return
        for name, index, plain in named:
            scope.returned[name] = (ordinal, index, plain)

    def _returned(self, name: str) -> Returned | None:
        """What a name read here stands for, where its binding to a call is its only one."""
        scope = self.function_scope
        returned = scope.returned.get(name) if scope.kind == "function" else None
        if returned is None or scope.capture_locals is None or not scope.capture_locals.bound_once(name, returned[2]):
            return None
        return returned[:2]

    def false_unless(self, test: cst.BaseExpression) -> frozenset[Assumption]:
        """Assumptions any one of which makes ``test`` false: a return that is None, a
        parameter's element that never equals a member (``returned_elements.py``)."""
        if isinstance(test, cst.Name):
            returned = self._returned(test.value)
            return frozenset({returned}) if returned else frozenset()
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self.true_unless(test.expression)
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            return self.false_unless(test.left) | self.false_unless(test.right)
        return self._none_test(test, cst.IsNot) | self.element_unless(test, True)

    def true_unless(self, test: cst.BaseExpression) -> frozenset[Assumption]:
        """Assumptions any one of which makes ``test`` true."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self.false_unless(test.expression)
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
            return self.true_unless(test.left) | self.true_unless(test.right)
        return self._none_test(test, cst.Is) | self.element_unless(test, False)

    def _none_test(self, test: cst.BaseExpression, operator: type) -> frozenset[Returned]:
        """``x is None`` (``operator`` ``Is``) or ``x is not None`` of a returned name."""
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
            return frozenset()
        comparison = test.comparisons[0]
        right = comparison.comparator
        if not (type(comparison.operator) is operator and isinstance(right, cst.Name) and right.value == "None"):
            return frozenset()
        returned = self._returned(test.left.value) if isinstance(test.left, cst.Name) else None
        return frozenset({returned}) if returned else frozenset()

    def _set_unless(self, returned: frozenset[Assumption]) -> Callable[[], None]:
        def apply() -> None:
            self.captured_unless = returned

        return apply

    def _finish_returns(self) -> None:
        """Keep only the functions something is known of."""
        self.facts.none_returns = {name: known for name, known in self.facts.none_returns.items() if known}

    def _note_uncaptured_unless(self, ordinal: int) -> None:
        """A call made where a capture runs only if none of ``captured_unless`` holds."""
        if self.captured_unless and self.capture_modes:
            returns = sorted(list(a) for a in self.captured_unless if len(a) == 2)
            elements = sorted(list(a) for a in self.captured_unless if len(a) != 2)
            if returns:
                self.facts.uncaptured_unless[ordinal] = returns
            if elements:
                self.facts.uncaptured_unless_elements[ordinal] = elements

