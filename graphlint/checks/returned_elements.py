"""What the elements of a returned tuple are while a capture runs, and the tests of a
parameter's elements that this decides.

sglang's DeepSeek attention splits its forward in two: ``forward_prepare`` returns ``None,
attn_forward_method, forward_batch, inner_state``, ``attn_forward_method`` bound to a call of
``capture-call-results``; ``forward`` binds ``s = self.forward_prepare(...)`` and calls
``self.forward_core(s)``, which unpacks its parameter (``hidden_states, attn_forward_method,
forward_batch, inner_state = intermediate_state``) and tests ``attn_forward_method ==
AttnForwardMethod.MHA``. A mixin of the extractor's walk:

- each ``return`` a capture can run (some mode left) is read for what each element of a tuple
  display is in a capture: ``None``, or the values of a ``capture-call-results`` call (or of a
  name bound to one). Per function (a plain ``def``: no decorator, not async, no ``yield``),
  ``FileFacts.element_returns`` keeps, per element index, the values it may be in every such
  return. A return of None (``return``, the end of the body) adds nothing: its only readers here
  unpack it, which raises; a return of anything else (``return x[0]``, ``return (*xs, m)``)
  leaves the function out, an element not known its index;
- a name bound once by unpacking a parameter nothing rebinds (``a, m = p``) stands for element
  ``i`` of ``p``; an ``if`` on ``m == E.X`` (``!=``, ``is``, ``is not``; ``E.X`` a dotted name)
  that a capture does not decide otherwise walks its branches under assumptions (as
  ``returned_none.py``'s): the calls there are not captured if, for the call that enters the
  function, ``p``'s element ``i`` never (or always) is ``E.X``
  (``FileFacts.uncaptured_unless_elements``);
- an argument that is a name bound once to what a call returns (``s = self.f(); self.g(s)``)
  is that call's value (``FileFacts.returned_arguments``).

Which functions the calls run, and so what an edge hands over, is known only once the project
is linked: the regions walk decides (``element_conditions.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import libcst as cst

from graphlint.checks.capture_values import Modes, call_results
from graphlint.checks.facts import WHOLE_RETURN, ExtractOptions, FileFacts

# "element ``index`` of ``parameter`` == ``member``" must be able to be ``needs`` for code here to run
ElementAssumption = tuple[str, int, str, bool]
NONE_VALUE = "None"  # an element that is None, among the dotted values of ``element_returns``


class ReturnedElements:
    """The element half of the extractor (it provides the scopes, ``capture_modes``, ``qualify``,
    ``options``, ``ordinals`` and ``_returned``)."""

    facts: FileFacts
    function_scope: Any
    capture_modes: Modes
    options: ExtractOptions
    ordinals: dict[int, tuple[str, int]]
    qualify: Callable[[cst.BaseExpression], str | None]
    _returned: Callable[[str], "tuple[int, int] | None"]  # returned_none.py
    # function → element index → the values it may be in the returns read so far (None: unknown)
    element_values: dict[str, dict[int, frozenset[str] | None]]
    unknown_elements: set[str]  # functions a return of which is no tuple display (or not read)

    def _start_elements(self, node: cst.FunctionDef, qualname: str) -> None:
        if node.decorators or node.asynchronous is not None:
            self._unknown_elements(qualname)
        else:
            self.element_values.setdefault(qualname, {})

    def _unknown_elements(self, qualname: str) -> None:
        self.unknown_elements.add(qualname)
        self.element_values.pop(qualname, None)

    def _on_element_return(self, node: cst.Return) -> None:
        scope = self.function_scope
        known = self.element_values.get(scope.qualname)
        if scope.kind != "function" or known is None or not self.capture_modes:
            return
        value = node.value
        if value is None or (isinstance(value, cst.Name) and value.value == "None"):
            return  # unpacking it raises
        elements = value.elements if isinstance(value, cst.Tuple) else None
        if elements is None or any(isinstance(e, cst.StarredElement) for e in elements):
            self._unknown_elements(scope.qualname)
            return
        for index, element in enumerate(elements):
            values = self._element_value(element.value)
            if index not in known:
                known[index] = values
            else:
                before = known[index]
                known[index] = None if before is None or values is None else before | values

    def _element_value(self, expr: cst.BaseExpression) -> frozenset[str] | None:
        if isinstance(expr, cst.Name) and expr.value == "None":
            return frozenset({NONE_VALUE})
        found = call_results(expr, self.qualify, self.options)
        if found is None and isinstance(expr, cst.Name) and self.function_scope.capture_locals is not None:
            found = self.function_scope.capture_locals.results(expr.value)
        return found

    def _finish_elements(self) -> None:
        for qualname, known in self.element_values.items():
            values = {str(index): sorted(v) for index, v in known.items() if v is not None}
            if values and qualname not in self.unknown_elements:
                self.facts.element_returns[qualname] = values

    def _note_unpacked(self, scope: Any, targets: list[cst.BaseExpression], value: cst.BaseExpression) -> None:
        """``a, m = p``, ``p`` a parameter: the names that stand for its elements."""
        if scope.kind != "function" or scope.capture_locals is None or len(targets) != 1:
            return
        target = targets[0]
        if not (isinstance(value, cst.Name) and value.value in _parameters(scope.capture_locals.function)):
            return
        if isinstance(target, (cst.Tuple, cst.List)) and all(isinstance(e, cst.Element) for e in target.elements):
            for index, element in enumerate(target.elements):
                if isinstance(element.value, cst.Name):
                    scope.unpacked[element.value.value] = (value.value, index)

    def element_unless(self, test: cst.BaseExpression, taken: bool) -> frozenset[ElementAssumption]:
        """Where code runs only if ``test`` is ``taken``: the assumption under which it never is
        (``m == E.X`` or ``m != E.X``, ``m`` an element of a parameter), if any."""
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
            return frozenset()
        operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
        if not isinstance(operator, (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot)):
            return frozenset()
        for name, member in ((test.left, right), (right, test.left)):
            element = self._unpacked(name.value) if isinstance(name, cst.Name) else None
            dotted = self.qualify(member) if isinstance(member, cst.Attribute) else None
            if element is not None and dotted is not None:
                equal = isinstance(operator, (cst.Equal, cst.Is))
                return frozenset({(*element, dotted, taken == equal)})
        return frozenset()

    def _unpacked(self, name: str) -> tuple[str, int] | None:
        """The parameter element a name read here stands for, where that unpacking is the name's
        only binding and the parameter's is its own."""
        scope = self.function_scope
        element = scope.unpacked.get(name) if scope.kind == "function" else None
        locals_ = scope.capture_locals
        if element is None or locals_ is None:
            return None
        return element if locals_.bound_once(name, False) and locals_.bound_once(element[0], False) else None

    def _note_returned_arguments(self, node: cst.Call, ordinal: int) -> None:
        """The arguments that are what another call returns (positions as ``CallSite.args``
        numbers them: up to the first ``*xs``)."""
        found: dict[str, int] = {}
        position = 0
        for arg in node.args:
            if arg.star:
                if arg.keyword is None and arg.star == "*":
                    position = -1
                continue
            key = arg.keyword.value if arg.keyword is not None else (str(position) if position >= 0 else None)
            if arg.keyword is None and position >= 0:
                position += 1
            returned = self._returned(arg.value.value) if isinstance(arg.value, cst.Name) and key is not None else None
            if returned is not None and returned[1] == WHOLE_RETURN:
                found[key] = returned[0]  # type: ignore[index]
        if found:
            self.facts.returned_arguments[ordinal] = found


def _parameters(function: cst.FunctionDef | cst.Module) -> set[str]:
    if not isinstance(function, cst.FunctionDef):
        return set()
    params = function.params
    return {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
