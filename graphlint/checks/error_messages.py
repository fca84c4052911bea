"""The messages of ``raise`` and ``assert``, and blocks that end by raising: run only when the code fails.

Dynamo does not trace what a ``raise`` builds (its exception and cause) nor an ``assert``'s
message on the passing path, nor a block that always ends in a ``raise`` (``if bad: msg =
f"..."; logger.error(msg); raise ValueError(msg)``): it guards on the test and traces the other
way. So a rule that judges what the graph traces (``GL102``: an f-string of a traced value;
``GL106``: a logging call) asks ``in_error_message`` and leaves them alone. A block is failing
when its last statement is a ``raise`` and nothing in it can leave it another way (``return``,
``break``, ``continue``, ``yield`` outside the functions and classes defined in it). A mixin of the
extractor: its walk calls ``_on_raise`` and ``_on_assert`` for those statements, and
``_failing_block`` for each indented block.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from graphlint.checks.compile_branches import WalkItem


class ErrorMessages:
    in_error_message = False  # inside the message of a ``raise`` or an ``assert``
    _leaves: Callable[[cst.CSTNode], bool]  # raising_blocks.py

    def _set_error_message(self, inside: bool) -> Callable[[], None]:
        def apply() -> None:
            self.in_error_message = inside

        return apply

    def _on_raise(self, node: cst.CSTNode) -> list[WalkItem]:
        """What a ``raise`` builds is its message: dynamo does not trace it on the passing path."""
        assert isinstance(node, cst.Raise)
        parts = [part for part in (node.exc, node.cause.item if node.cause else None) if part is not None]
        return [self._set_error_message(True), *parts, self._set_error_message(self.in_error_message)]

    def _failing_block(self, node: cst.CSTNode, plan: list[WalkItem]) -> list[WalkItem]:
        """``plan`` (the walk of the block ``node``), marked as run only on the way to a raise
        where the block always ends in one."""
        body = node.body if isinstance(node, cst.IndentedBlock) else ()
        last = body[-1] if body else None
        ends_raising = isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Raise)
        if not ends_raising or any(map(self._leaves, body)):
            return plan
        return [self._set_error_message(True), *plan, self._set_error_message(self.in_error_message)]

    def _on_assert(self, node: cst.CSTNode) -> list[WalkItem]:
        """``assert test, message``: the test is traced, the message only when it fails."""
        assert isinstance(node, cst.Assert)
        message = [self._set_error_message(True), node.msg, self._set_error_message(self.in_error_message)]
        return [node.test, *(message if node.msg is not None else [])]
