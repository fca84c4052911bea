"""Line and column of the nodes the checker reports, without libcst's PositionProvider.

libcst nodes carry no positions; its PositionProvider regenerates the whole file and costs about
two parses (perf-notes.md). The standard ``ast`` parser gives positions for almost nothing (a
tenth of a libcst parse), so each reported libcst node is matched with its ``ast`` twin: the
n-th ``Call`` in source order in one tree is the n-th ``Call`` in the other. When the two trees
disagree on how many nodes of a kind there are (syntax ``ast`` of this Python cannot read, or an
odd construct), the file falls back to PositionProvider, which is slow but exact.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import libcst as cst

from graphlint.checks.ast_children import child_nodes


@dataclass(frozen=True)
class Span:
    """1-based line and column of the start, and of the end (exclusive), of a node."""

    line: int
    column: int
    end_line: int
    end_column: int


# libcst node type → anchor kind; each kind has an ast twin below.
ANCHOR_KINDS: dict[type[cst.CSTNode], str] = {
    cst.Call: "Call",
    cst.Subscript: "Subscript",
    cst.BinaryOperation: "BinaryOperation",
    cst.Decorator: "Decorator",
    cst.FormattedStringExpression: "FormattedStringExpression",
    cst.WithItem: "WithItem",
    cst.AssignTarget: "AssignTarget",  # each target of ``a = b = value`` (not annotated or augmented)
    cst.If: "If",  # an ``if`` or ``elif``, located at its test
}

_AstSpan = tuple[int, int, int, int]  # line, byte column, end line, end byte column
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def source_order(nodes: Iterable[ast.AST]) -> list[ast.AST]:
    """``ast`` nodes in the order a pre-order walk of the source meets them (see below)."""
    return sorted(nodes, key=lambda n: (n.lineno, n.col_offset, -n.end_lineno, -n.end_col_offset))  # type: ignore[attr-defined, operator]


def _ast_anchors(tree: ast.AST) -> dict[str, list[_AstSpan]]:
    found: dict[str, list[_AstSpan]] = {kind: [] for kind in ANCHOR_KINDS.values()}

    def add(kind: str, node: ast.AST) -> None:
        found[kind].append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined]

    queue = deque([tree])  # breadth first, as ``ast.walk``
    while queue:
        node = queue.popleft()
        node_type = type(node)
        if node_type is ast.Name or node_type is ast.Constant:  # the commonest nodes, and leaves
            continue
        queue.extend(child_nodes(node))
        if node_type not in _AST_ANCHOR_TYPES:
            continue
        if node_type is ast.Call:
            add("Call", node)
        elif node_type is ast.Subscript:
            add("Subscript", node)
        elif node_type is ast.BinOp:
            add("BinaryOperation", node)
        elif node_type is ast.FormattedValue:
            # Before Python 3.12 a FormattedValue spans the whole f-string; its value does not.
            add("FormattedStringExpression", node.value)  # type: ignore[attr-defined]
        elif node_type is ast.If:  # ``elif`` is an If in the orelse, in both trees
            add("If", node.test)  # type: ignore[attr-defined]
        elif node_type is ast.Assign:
            for target in node.targets:  # type: ignore[attr-defined]
                add("AssignTarget", target)
        elif node_type is ast.With or node_type is ast.AsyncWith:
            for item in node.items:  # type: ignore[attr-defined]  # an ast withitem has no position; its expression has
                add("WithItem", item.context_expr)
        else:  # a def or class
            for decorator in node.decorator_list:  # type: ignore[attr-defined]
                add("Decorator", decorator)
    for spans in found.values():
        # Source order = by start; a node that contains another starting at the same place
        # (``f(x)(y)`` around ``f(x)``) ends later and comes first, as in a pre-order walk.
        spans.sort(key=lambda s: (s[0], s[1], -s[2], -s[3]))
    return found


# The ast node types that hold an anchor (ast types are final: ``type(node) is`` is isinstance)
_AST_ANCHOR_TYPES = frozenset({
    ast.Call, ast.Subscript, ast.BinOp, ast.FormattedValue, ast.If, ast.Assign, ast.With, ast.AsyncWith,
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
})


def locate(
    source: str,
    module: cst.Module,
    counts: dict[str, int],
    anchors: Iterable[tuple[str, int, cst.CSTNode]],
    *,
    tree: ast.Module | None = None,
) -> dict[tuple[str, int], Span]:
    """Spans of ``anchors`` (kind, ordinal in source order of that kind, node).

    ``counts`` is how many nodes of each kind the libcst walk saw; it guards the matching.
    ``tree`` is ``source``'s ``ast`` when the caller has parsed it already.
    """
    anchors = list(anchors)
    if not anchors:
        return {}
    try:
        twins = _ast_anchors(tree if tree is not None else ast.parse(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        twins = None
    if twins is not None and all(len(twins[k]) == counts.get(k, 0) for k in twins):
        # Python's own line breaks only: str.splitlines() also splits at \f, \v, \x1c…
        to_char = _char_column(_LINE_BREAK.split(source))
        spans = {}
        for kind, ordinal, _ in anchors:
            line, col, end_line, end_col = twins[kind][ordinal]
            spans[kind, ordinal] = Span(line, to_char(line, col) + 1, end_line, to_char(end_line, end_col) + 1)
        return spans
    return _locate_with_libcst(module, anchors)


def _char_column(lines: list[str]) -> Callable[[int, int], int]:
    """ast columns count UTF-8 bytes; reports count characters."""

    def convert(line: int, byte_col: int) -> int:
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))

    return convert


def _locate_with_libcst(
    module: cst.Module, anchors: list[tuple[str, int, cst.CSTNode]]
) -> dict[tuple[str, int], Span]:
    from libcst.metadata import MetadataWrapper, PositionProvider

    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    spans = {}
    for kind, ordinal, node in anchors:
        if isinstance(node, cst.Decorator):
            node = node.decorator
        elif isinstance(node, cst.FormattedStringExpression):
            node = node.expression
        elif isinstance(node, cst.WithItem):
            node = node.item
        elif isinstance(node, cst.If):
            node = node.test
        r = positions[node]
        spans[kind, ordinal] = Span(r.start.line, r.start.column + 1, r.end.line, r.end.column + 1)
    return spans
