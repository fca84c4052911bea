"""Which calls of a function an edge into it captures, where they test an element of a tuple
the edge hands over (the walk wrote the tests down: ``returned_elements.py``).

``forward`` binds ``s = self.forward_prepare(...)`` and calls ``self.forward_core(s)``;
``forward_core`` unpacks its parameter and calls ``forward_absorb_core`` only under
``attn_forward_method == AttnForwardMethod.MLA``. Entered by that edge, the call is not captured
when every function the call of ``forward_prepare`` runs (in the caller's copy) returns, in every
capture, tuples whose element 1 is never ``AttnForwardMethod.MLA`` (``MLA_NPU``, ``DSA_NPU`` or
None). Sound only where that is known whole: the argument is such a name, the call is resolved,
every target a project function with known returns, the value flow not cut short; anything else
(another edge's argument, an entry point's framework call) captures the call.
"""

from __future__ import annotations

from typing import Any

from graphlint.checks.edge_conditions import Edge, handed_over
from graphlint.checks.facts import Expr
from graphlint.checks.link import Project
from graphlint.checks.member_values import equal_in
from graphlint.checks.value_graph import FunctionKey

_EVERY = frozenset({"every"})  # one mode: equal_in answers it (always equal), none (never) or None
_ELEMENTS = "elements"  # marks what ``_element_values`` hands ``handed_over``, apart from form-known values


def captures(project: Project, edge: Edge | None, callee: FunctionKey, ordinal: int, caller_copy: str) -> bool:
    """Whether call ``ordinal`` of ``callee`` can be captured when ``edge`` (made in the
    caller's copy ``caller_copy``) enters ``callee``."""
    conditions = project.files[callee.file].facts.uncaptured_unless_elements.get(ordinal)
    if not conditions or edge is None or project.graph.stopped is not None:
        return True
    returned = project.files[edge[0]].facts.returned_arguments.get(edge[1])
    site = project.site(*edge)
    if not returned or site is None:
        return True
    sources = {id(expr): source for key, source in returned.items() if (expr := _argument(site.args, site.keywords, key)) is not None}

    def resolve(expr: Expr | None, nonnull: Any) -> list[Any] | None:
        source = sources.get(id(expr))
        elements = _element_values(project, edge[0], source, caller_copy) if source is not None else None
        return None if elements is None else [_ELEMENTS, elements]

    handed = handed_over(project, edge, callee, resolve)
    for parameter, index, member, needs in conditions:
        known = handed.get(parameter)
        if not (known and known[0] == _ELEMENTS and str(index) in known[1]):
            continue
        equal = equal_in(frozenset(known[1][str(index)]), member, _EVERY)
        if equal is not None and bool(equal) != needs:
            return False
    return True


def _argument(args: list[Expr | None], keywords: list[tuple[str, Expr | None]], key: str) -> Expr | None:
    if key.isdigit():
        return args[int(key)] if int(key) < len(args) else None
    return dict(keywords).get(key)


def _element_values(project: Project, file: int, ordinal: int, copy: str) -> dict[str, list[str]] | None:
    """Per element index, the values what call ``ordinal`` of ``file`` returns may hold in a
    capture (an index only where every function the call runs knows it)."""
    callees = project.called_functions(file, ordinal, copy) or []
    known = [project.files[callee.file].facts.element_returns.get(callee.qualname) for callee in callees]
    if not known or any(k is None for k in known):
        return None
    indices = set.intersection(*(set(k) for k in known))  # type: ignore[arg-type]
    return {index: sorted({v for k in known for v in k[index]}) for index in indices}  # type: ignore[index]
