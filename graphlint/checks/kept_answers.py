"""Answers about libcst nodes kept from one walk of an edited buffer to the next.

``reparse.StatementParser`` gives successive texts of a buffer modules that share the nodes of
every top-level statement that did not change. Some questions the walk asks of a node depend on
that node's subtree alone (whether a statement holds a ``return``, what an expression surely
evaluates, the names a function binds): their answers hold for the same node in the next text,
and asking them again was most of what an edit re-walked for nothing (issue 18).

The tables are keyed by ``id()`` of the node, which is sound only while the node is alive: the
tables keep every module they were filled from (so every node keyed), and are emptied together
with those modules once ``MODULES_KEPT`` of them are held. Nothing that depends on the rest of
the file (scopes, ordinals, lines, modes) is kept here. What a top-level statement's text alone
says (the names it binds) is kept by that text.
"""

from __future__ import annotations

import libcst as cst

from graphlint.checks.binding_counts import BindingCounts
from graphlint.checks.unbound_names import StatementBindings

MODULES_KEPT = 32  # a server's recent texts; their unchanged statements are shared, not copied


class KeptAnswers:
    def __init__(self) -> None:
        self._modules: list[cst.Module] = []
        self._empty()

    def _empty(self) -> None:
        self.leaving_nodes: dict[int, bool] = {}  # raising_blocks.py, each as ``RaisingBlocks`` says
        self.none_operands: dict[int, tuple[cst.BaseExpression, ...]] = {}
        self.sure_calls: dict[int, tuple[cst.Call, ...]] = {}
        self.function_names: dict[int, frozenset[str]] = {}
        self.binding_counts: dict[int, BindingCounts] = {}  # capture_values.py, per function
        self.statement_bindings: dict[int, StatementBindings] = {}  # unbound_names.py
        self.piece_names: dict[str, frozenset[str]] = {}  # empty_values.py: by a statement's text

    def hold(self, module: cst.Module) -> None:
        """Keep ``module`` (and so each node of it) alive as long as answers about it are kept:
        before a walk of it takes the tables."""
        if len(self._modules) >= MODULES_KEPT:
            self._modules.clear()
            self._empty()
        self._modules.append(module)
