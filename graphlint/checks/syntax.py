"""Small helpers over libcst trees: a fast source-order walk and dotted names.

libcst's own visitor rebuilds every node it passes (``_visit_and_replace_children``) and its
parent/scope/qualified-name providers cost several parses each (see ``perf-notes.md``). The
static checker only reads the tree, so it walks the node dataclasses directly, skipping the
whitespace and punctuation fields, in the order the code appears in the source. That order is
what ``positions.py`` relies on to give nodes their line and column.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Iterator

import libcst as cst

# Fields that hold only whitespace, comments or punctuation: never a node the checker reads.
_SKIPPED_FIELDS = frozenset(
    {
        "lpar", "rpar", "leading_lines", "lines_after_decorators", "trailing_whitespace",
        "comma", "equal", "semicolon", "header", "footer", "indent", "lbracket", "rbracket",
        "lbrace", "rbrace", "colon", "dot", "star", "asynchronous", "operator", "encoding",
        "default_indent", "default_newline", "has_trailing_newline", "conversion",
        "posonly_ind", "whitespace_after_star", "whitespace_after_param",
    }
)

# Node types whose dataclass field order differs from their order in the source.
_SOURCE_ORDER: dict[type[cst.CSTNode], tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "name", "type_parameters", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.Parameters: ("posonly_params", "params", "star_arg", "kwonly_params", "star_kwarg"),
    cst.Arg: ("keyword", "value"),
    cst.MatchCase: ("pattern", "guard", "body"),
}

_fields_by_type: dict[type, tuple[str, ...]] = {}


def child_fields(node_type: type[cst.CSTNode]) -> tuple[str, ...]:
    """The fields of ``node_type`` that may hold a code-carrying node, in source order. A field
    whose declared type admits no node (``Name.value: str``, ``Arg.star: Literal[...]``) is left
    out: most nodes met (names, strings, numbers) then have no field to read at all."""
    names = _fields_by_type.get(node_type)
    if names is None:
        ordered = _SOURCE_ORDER.get(node_type)
        declared = {f.name: f.type for f in dataclasses.fields(node_type)}
        if ordered is None:
            ordered = tuple(declared)
        names = tuple(
            n for n in ordered
            if n not in _SKIPPED_FIELDS and not n.startswith("whitespace") and _may_hold_node(declared[n])
        )
        _fields_by_type[node_type] = names
    return names


def _may_hold_node(declared: object) -> bool:
    """Whether a value of the declared type can be (or contain) a libcst node; True for what
    this does not recognise."""
    if isinstance(declared, type):
        return declared not in (str, bool, int, float)
    origin = typing.get_origin(declared)
    if origin is typing.Literal:
        return False
    if origin is typing.Union:
        return any(_may_hold_node(arg) for arg in typing.get_args(declared))
    return True  # Sequence[...], forward references, anything else: read it


class NodeTypes(dict[type, bool]):
    """``isinstance(node, types)`` asked as ``test[type(node)]``, the answer remembered per type:
    libcst's nodes are ABCs, so an isinstance() that fails runs ``ABCMeta.__instancecheck__``
    once per class it names (a fifth of a file's extraction went there, in traversals that test
    every node of a subtree)."""

    def __init__(self, *types: type) -> None:
        super().__init__()
        self.types = types

    def __missing__(self, node_type: type) -> bool:
        known = self[node_type] = issubclass(node_type, self.types)
        return known


_NODE_TYPES = NodeTypes(cst.CSTNode)


def is_node_type(value_type: type) -> bool:
    """``issubclass(value_type, cst.CSTNode)``, remembered."""
    return _NODE_TYPES[value_type]


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The child nodes that carry code (not whitespace), in source order."""
    found: list[cst.CSTNode] = []
    for name in child_fields(type(node)):
        value = getattr(node, name)
        value_type = type(value)
        if value_type is tuple or value_type is list:
            found.extend(value)  # a sequence field holds nodes only (libcst's visitors rely on it too)
        elif _NODE_TYPES[value_type]:
            found.append(value)
    return found


def preorder(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every code-carrying node under ``node`` (itself first), in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))


def dotted_name(expr: cst.BaseExpression) -> str | None:
    """``torch.npu.graph`` for a Name/Attribute chain; None for anything else."""
    parts: list[str] = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return None
    parts.append(expr.value)
    return ".".join(reversed(parts))


def string_value(expr: cst.BaseExpression | None) -> str | None:
    """The value of a plain string literal, else None."""
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call) -> list[cst.Arg]:
    return [a for a in call.args if a.keyword is None and not a.star]


def attribute_name(expr: cst.Attribute, qualify: Callable[[cst.BaseExpression], str | None]) -> str | None:
    """An attribute as the attribute keys name it: its dotted name (the head resolved through the
    file's imports), or, for a chain read off a call's result, the callee's with ``()`` whatever
    the call's arguments (``get_attn_backend().forward_metadata.seq_lens``)."""
    name = qualify(expr)
    if name is not None:
        return name
    parts: list[str] = []
    root: cst.BaseExpression = expr
    while isinstance(root, cst.Attribute):
        parts.append(root.attr.value)
        root = root.value
    callee = qualify(root.func) if isinstance(root, cst.Call) else None
    return None if callee is None else ".".join([f"{callee}()", *reversed(parts)])


def target_names(target: cst.CSTNode) -> list[str]:
    """The names a target binds: ``x``, ``a, *b``; none for ``obj.x`` or ``d[k]`` (a store into
    an object rebinds no name, not even one spelled like its attribute). For an import, ``del``
    statement or ``case`` every name in it counts (more bindings only lose what is known)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    if isinstance(target, (cst.Import, cst.ImportFrom, cst.Del, cst.MatchCase)):
        return [n.value for n in preorder(target) if isinstance(n, cst.Name)]
    return []
