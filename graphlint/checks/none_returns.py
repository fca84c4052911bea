"""Calls a capture never makes because a helper returns None for its batch, decided once the
project is linked (the walk wrote down the assumptions: ``returned_none.py``).

A call made under ``if pixel_values is not None:``, ``pixel_values`` bound to element 0 of what
``self._collect_mm_data(forward_batch)`` returns, is not captured when every function that call
runs (in the copy of the caller at hand: ``receiver_copies.py``) returns None there in every
capture. Sound only where the call's targets are known whole: every target a project function
(no outside name, no class built), the call resolved and the value flow not cut short; anything
else keeps the call.
"""

from __future__ import annotations

from graphlint.checks.facts import WHOLE_RETURN as WHOLE
from graphlint.checks.link import Project
from graphlint.checks.value_graph import FunctionKey


def uncaptured_by_returns(project: Project, key: FunctionKey, copy: str) -> set[int]:
    """The calls of ``key`` (in ``copy``) that a capture never makes: one of the returns each
    depends on is None in every capture."""
    unless = project.files[key.file].facts.uncaptured_unless
    if not unless or project.graph.stopped is not None:
        return set()
    return {
        ordinal
        for ordinal in project.calls_in(key)
        if any(_returns_none(project, key.file, source, index, copy) for source, index in unless.get(ordinal, ()))
    }


def _returns_none(project: Project, file: int, ordinal: int, index: int, copy: str) -> bool:
    """Whether what call ``ordinal`` of ``file`` returns (element ``index``; ``WHOLE``: the value)
    is None in every capture."""
    callees = project.called_functions(file, ordinal, copy)
    return bool(callees) and all(_none_in(project, callee, index) for callee in callees)


def _none_in(project: Project, callee: FunctionKey, index: int) -> bool:
    known = project.files[callee.file].facts.none_returns.get(callee.qualname)
    return known is not None and (known == [WHOLE] or (index != WHOLE and index in known))
