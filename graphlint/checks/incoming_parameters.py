"""Which reads of a function's parameters still hold what its caller handed over.

``cos_sin_cache`` in ``if cos_sin_cache.device != q.device: cos_sin_cache = cos_sin_cache.to(q.device)``
is read before the statement rebinds it: the ``.to()`` moves the caller's tensor, and what every
caller hands decides whether that copies (``module_state_arguments.py``). A read is the
parameter's value where no binding of the name runs before it: every binding comes later in
evaluation order (an assignment binds after its value is evaluated) and shares no loop with the
read (a binding later in a loop body runs before the read of the next iteration). A name declared
``global`` or ``nonlocal`` anywhere in the function, and reads in nested scopes (lambdas,
comprehensions, nested functions), are never counted: a read that is not known stays unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from graphlint.checks.syntax import children, preorder, target_names

_OWN_SCOPES = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


@dataclass(frozen=True)
class _Bind:
    """Where evaluation binds ``target``'s names: after the value of its statement."""

    target: cst.CSTNode


Loops = frozenset[int]


def incoming_reads(function: cst.FunctionDef) -> frozenset[int]:
    """``id()`` of the ``Name`` nodes of ``function``'s body that read a parameter (not
    ``*args`` / ``**kwargs``) before anything rebinds it."""
    params = function.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    declared = {
        name.name.value
        for node in preorder(function.body)
        if isinstance(node, (cst.Global, cst.Nonlocal))
        for name in node.names
    }
    names -= declared
    if not names:
        return frozenset()
    reads: list[tuple[int, str, int, Loops]] = []
    bindings: dict[str, list[tuple[int, Loops]]] = {}
    stack: list[tuple[cst.CSTNode | _Bind, Loops]] = [(function.body, frozenset())]
    index = 0
    while stack:
        item, loops = stack.pop()
        index += 1
        if isinstance(item, _Bind):
            for name in target_names(item.target):
                bindings.setdefault(name, []).append((index, loops))
            continue
        if isinstance(item, cst.Name):
            if item.value in names:
                reads.append((id(item), item.value, index, loops))
            continue
        stack.extend((node, loop_set) for node, loop_set in reversed(_evaluation(item, loops)))
    return frozenset(
        node
        for node, name, at, loops in reads
        if all(bound > at and not (bound_loops & loops) for bound, bound_loops in bindings.get(name, ()))
    )


def _evaluation(node: cst.CSTNode, loops: Loops) -> list[tuple[cst.CSTNode | _Bind, Loops]]:
    """What ``node`` evaluates and binds, in the order Python runs it."""
    if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.NamedExpr)):
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        value = [node.value] if node.value is not None else []
        return [(n, loops) for n in value] + [(_Bind(t), loops) for t in targets]
    if isinstance(node, cst.For):
        inside = loops | {id(node)}
        body = [(node.iter, loops), (_Bind(node.target), inside), (node.body, inside)]
        return body + ([(node.orelse, loops)] if node.orelse else [])
    if isinstance(node, cst.While):
        inside = loops | {id(node)}
        return [(node.test, inside), (node.body, inside)] + ([(node.orelse, loops)] if node.orelse else [])
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return [(_Bind(node.name), loops)]  # its body is a scope of its own
    if isinstance(node, _OWN_SCOPES):
        # a walrus in a comprehension binds in this function: a binding here, read or not
        return [(_Bind(n.target), loops) for n in preorder(node) if isinstance(n, cst.NamedExpr)]
    if isinstance(node, (cst.Import, cst.ImportFrom, cst.Del, cst.MatchCase)):
        return [(_Bind(node), loops)]  # what they bind: conservatively every name in them
    if isinstance(node, cst.WithItem):
        return [(node.item, loops)] + ([(_Bind(node.asname.name), loops)] if node.asname else [])
    if isinstance(node, cst.ExceptHandler):
        head = [(node.type, loops)] if node.type is not None else []
        return head + ([(_Bind(node.name.name), loops)] if node.name else []) + [(node.body, loops)]
    if isinstance(node, cst.Attribute):
        return [(node.value, loops)]  # ``x.name``: ``name`` is no read of a variable
    if isinstance(node, cst.Arg):
        return [(node.value, loops)]  # ``f(name=x)``: the keyword is no read
    return [(child, loops) for child in children(node)]
