"""What the extractor's walk does with each node type, looked up once per type.

Most libcst nodes (names, attributes, arguments) ask nothing: the walk pushes their child fields
itself (``PlainFields``). The others carry an anchor kind (positions are matched by ordinal), a
handler of the extractor, and the rules' ``visit_<NodeType>`` hooks. A callable on the walk's
stack is a step of a handler's plan (``STEP``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from typing import Any

import libcst as cst

from graphlint.checks import dynamo
from graphlint.checks.positions import ANCHOR_KINDS
from graphlint.checks.rules import all_rules
from graphlint.checks.rules.base import SiteContext
from graphlint.checks.syntax import child_fields, is_node_type


STEP = object()


class PlainFields(tuple):  # type: ignore[type-arg]
    """The child fields of a node type nothing asks about, last first (``children``' order
    reversed, as the walk's stack wants it)."""


def asks_of(node_type: type, handlers: dict[type, Callable[..., Any]], hooks: dict[type, list[Callable[..., None]]]) -> Any:
    """What the walk does with an item of ``node_type`` (``run``'s ``dispatch``)."""
    if not is_node_type(node_type):
        return STEP
    kind, handler, node_hooks = ANCHOR_KINDS.get(node_type), handlers.get(node_type), hooks.get(node_type, [])
    if kind is None and handler is None and not node_hooks:
        return PlainFields(reversed(child_fields(node_type)))
    return kind, handler, tuple(node_hooks)


@cache
def rule_hooks() -> dict[type, list[Callable[[cst.CSTNode, SiteContext], None]]]:
    """Every rule's ``visit_<NodeType>`` methods, by node type."""
    hooks: dict[type, list[Callable[[cst.CSTNode, SiteContext], None]]] = {}
    for rule in all_rules():
        for name in dir(rule):
            if name.startswith("visit_"):
                node_type = getattr(cst, name[len("visit_") :])
                hooks.setdefault(node_type, []).append(getattr(rule, name))
    return hooks


def prepare_walk() -> None:
    """Load now what the walk otherwise loads at its first file: the rules (their modules, and
    the table of their hooks), dynamo's table, libcst's native parser. A pool's workers, forked
    after this, inherit them; each loaded them again at its first file."""
    importlib.import_module("libcst.native")  # what libcst's first parse imports
    rule_hooks()
    dynamo.load()
