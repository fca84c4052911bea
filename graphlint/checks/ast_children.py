"""``ast.iter_child_nodes`` for the walks of one file's ``ast`` (``flow_scopes.py``,
``assignments.py``, ``positions.py``), at a fraction of its cost.

The standard one is a generator over another generator (``ast.iter_fields``), run once per node
of every walk: on a large tree that was a third of the assignment graph's own walk. This is one
plain loop over a node type's fields, remembered per type, and it leaves out the fields that
hold only a context or an operator (``Load()``, ``Add()``, the ``ops`` of a comparison): leaves
no walk reads, each of which ``iter_child_nodes`` handed back as a node to visit.
"""

from __future__ import annotations

import ast

# Fields whose nodes are singletons that carry no code: expr_context, operator, unaryop, boolop, cmpop.
_MARKER_FIELDS = frozenset({"ctx", "op", "ops"})

_fields_by_type: dict[type, tuple[str, ...]] = {}


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """The child nodes of ``node`` in field order, as ``ast.iter_child_nodes`` gives them, less
    contexts and operators."""
    names = _fields_by_type.get(type(node))
    if names is None:
        names = _fields_by_type[type(node)] = tuple(n for n in node._fields if n not in _MARKER_FIELDS)
    found: list[ast.AST] = []
    for name in names:
        value = getattr(node, name, None)
        if type(value) is list:
            for item in value:  # None keys of a ``{**d}`` display, the names of ``global``
                if isinstance(item, ast.AST):
                    found.append(item)
        elif isinstance(value, ast.AST):
            found.append(value)
    return found
