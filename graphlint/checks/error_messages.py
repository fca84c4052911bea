"""The messages of ``raise`` and ``assert``: built only when the code fails.

Dynamo does not trace what a ``raise`` builds (its exception and cause) nor an ``assert``'s
message on the passing path, so a rule that judges what the graph traces (``GL102``: an
f-string of a traced value) asks ``in_error_message`` and leaves them alone. A mixin of the
extractor: its walk calls ``_on_raise`` and ``_on_assert`` for those statements.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from graphlint.checks.compile_branches import WalkItem


class ErrorMessages:
    in_error_message = False  # inside the message of a ``raise`` or an ``assert``

    def _set_error_message(self, inside: bool) -> Callable[[], None]:
        def apply() -> None:
            self.in_error_message = inside

        return apply

    def _on_raise(self, node: cst.CSTNode) -> list[WalkItem]:
        """What a ``raise`` builds is its message: dynamo does not trace it on the passing path."""
        assert isinstance(node, cst.Raise)
        parts = [part for part in (node.exc, node.cause.item if node.cause else None) if part is not None]
        return [self._set_error_message(True), *parts, self._set_error_message(self.in_error_message)]

    def _on_assert(self, node: cst.CSTNode) -> list[WalkItem]:
        """``assert test, message``: the test is traced, the message only when it fails."""
        assert isinstance(node, cst.Assert)
        message = [self._set_error_message(True), node.msg, self._set_error_message(self.in_error_message)]
        return [node.test, *(message if node.msg is not None else [])]
