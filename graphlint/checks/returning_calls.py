"""The capture modes a point of a function is reached in, as the walk sees them, and the calls
that must have returned before it: what the linked project needs to carry modes across calls
(``mode_flow.py``).

sglang's MOSS-VL ``forward`` first runs ``pixel_values, ... = self._collect_mm_data(forward_batch)``,
which returns at once in DECODE and otherwise reads ``all(forward_batch.encoder_cached)``, None
in every capture: it raises. So the rest of ``forward`` runs only in DECODE, and so does the
helper it calls next, whose non-decode branch no capture runs. The walk writes down, per file:

- ``call_modes``: the calls made in some, not all, capture modes (``compile_branches.py``);
- ``after_calls`` / ``call_after`` (and ``Candidate.after``): the calls a point is reached only
  after, each one the whole value of a statement earlier in an enclosing block of the same
  function (``x = f()``, ``f()``): the statements after it run only if it returned;
- ``return_points``: per function, each way it returns (a ``return``, the end of its body) with
  its modes and the calls before it. A generator, a coroutine, a decorated function (its
  decorator may catch what it raises) and a lambda are left out: they may return in any mode.

A mixin of the extractor (it provides ``capture_modes``, ``all_capture_modes``, ``ordinals``,
``facts`` and ``function_scope``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import libcst as cst

from graphlint.checks.capture_values import Modes
from graphlint.checks.facts import NO_CALL

_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod"})


class ReturningCalls:
    capture_modes: Modes
    all_capture_modes: Modes
    after: int  # the index in ``facts.after_calls`` of the last call known to have returned
    ordinals: dict[int, tuple[str, int]]
    facts: Any
    function_scope: Any
    returns_anywhere: set[str]  # functions that may return in any mode (generators, ...)
    function_bodies: set[int]  # id() of each function's body block

    def point_modes(self) -> list[str] | None:
        """The modes here, where a capture runs in some but not all of them (None: all)."""
        modes = self.capture_modes
        return None if modes == self.all_capture_modes else sorted(modes)

    def _set_after(self, after: int) -> Callable[[], None]:
        def apply() -> None:
            self.after = after

        return apply

    def _returned_calls(self, statement: cst.CSTNode) -> list[cst.Call]:
        """The calls a simple statement's small statements are (``x = f()``, ``f()``): once it
        is done, each returned."""
        if not isinstance(statement, cst.SimpleStatementLine):
            return []
        calls = []
        for small in statement.body:
            if not isinstance(small, (cst.Expr, cst.Assign, cst.AnnAssign)):
                break
            if isinstance(small.value, cst.Call):
                calls.append(small.value)
        return calls

    def _calls_returned(self, calls: list[cst.Call]) -> Callable[[], None]:
        """After a statement of ``calls`` (walked: they have ordinals), they are known to have returned."""

        def apply() -> None:
            for call in calls:
                self.facts.after_calls.append([self.after, self.ordinals[id(call)][1]])
                self.after = len(self.facts.after_calls) - 1

        return apply

    def _note_call_point(self, ordinal: int) -> None:
        modes = self.point_modes()
        if modes:  # none: ``uncaptured_calls``
            self.facts.call_modes[ordinal] = modes
        if self.after != NO_CALL:
            self.facts.call_after[ordinal] = self.after

    def _start_return_points(self, node: cst.FunctionDef, qualname: str) -> None:
        plain = all(
            isinstance(d.decorator, cst.Name) and d.decorator.value in _PLAIN_DECORATORS for d in node.decorators
        )
        # ``def f(): ...`` on one line: its end is not walked as a block's
        if node.asynchronous is not None or not plain or not isinstance(node.body, cst.IndentedBlock):
            self.returns_anywhere.add(qualname)
        self.facts.return_points.setdefault(qualname, [])

    def _note_return_point(self) -> None:
        """A ``return``, or the end of a function's body: the function returns here."""
        scope = self.function_scope
        if scope.kind == "function" and scope.qualname in self.facts.return_points:
            self.facts.return_points[scope.qualname].append([self.point_modes(), self.after])

    def _note_generator(self) -> None:
        """A generator returns a generator, whatever its body does."""
        self.returns_anywhere.add(self.function_scope.qualname)

    def _finish_return_points(self) -> None:
        """Keep the functions that do not return in every mode with no call before."""
        self.facts.return_points = {
            name: points
            for name, points in self.facts.return_points.items()
            if name not in self.returns_anywhere and [None, NO_CALL] not in points
        }
