"""How often a function binds each of its names, and which of those bindings keep a tensor on
its device: ``h = h.view(-1, d)`` (a device-preserving method of the name itself) and ``h *= s``
(in place). A name whose other bindings all keep its device holds tensors on one device from its
one binding on (``CaptureLocals.one_device``): ``h.device`` read at two calls is one device. Where
no loop takes a later binding back to a read, only the bindings before it count (LongCat-Flash's
``final = self.experts(...)``, read, then ``final = all_reduce(final)`` under ``if tp_size > 1``)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.syntax import NodeTypes, children, preorder, target_names

# What ``binding_counts`` looks at of a function's nodes, by type (``syntax.NodeTypes``); it
# walks into every other node.
_BINDING_OR_SCOPE = NodeTypes(
    cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr,
    cst.AsName, cst.Global, cst.Nonlocal, cst.Del,
)
_GLOBAL = NodeTypes(cst.Global)
_NONLOCAL = NodeTypes(cst.Nonlocal)

# A binding the walk does not record (a parameter, ``x += 1``, a loop target, ``global x``):
# counted so that the name is never known.
UNRECORDED = 1 << 20


@dataclass
class BindingCounts:
    counts: dict[str, int]  # per name, its bindings: a plain one 1, any other ``UNRECORDED``
    deleted: dict[str, int]  # … of them ``del name``
    kept: dict[str, int]  # … of them bindings that keep the tensor the name held on its device
    # per name, the others but ``del``: (the binding's place in source order, its count)
    origins: dict[str, list[tuple[int, int]]]
    order: dict[int, int]  # id(node) → its place in source order (parameters come first: -1)

    def origins_before(self, name: str, node: cst.CSTNode | None) -> int:
        """What the bindings of ``name`` that change its device count, those before ``node``
        only (all where ``node`` is None or not in the function's own body)."""
        place = self.order.get(id(node)) if node is not None else None
        return sum(amount for at, amount in self.origins.get(name, ()) if place is None or at < place)


def binding_counts(function: cst.FunctionDef | cst.Module) -> BindingCounts:
    """How often each name is bound in ``function``'s own body (or a module's top level): plain
    ``name = ...`` once each, any other binding (``del name`` too) ``UNRECORDED``, a store into an
    object (``obj.name = ...``, ``d[name] = ...``) none; the part of
    that ``del`` statements make, and the part bindings that keep a tensor's device make
    (functions, classes and lambdas nested in it have scopes of their own, but a ``nonlocal`` in
    a nested function rebinds the name here, and a ``:=`` in a comprehension binds it here; a
    module's name that a ``global`` statement anywhere in it may rebind is never known)."""
    found = BindingCounts({}, {}, {}, {}, {})
    place = -1  # parameters, before the body

    def add(target: cst.CSTNode, amount: int, part: dict[str, int] | None = None) -> None:
        """Count the names ``target`` binds; ``part``: the part of the counts they are also in
        (``deleted``, ``kept``), else one that may change the name's device (``origins``)."""
        for name in target_names(target):  # ``obj.x = ...`` binds neither ``obj`` nor ``x``
            found.counts[name] = found.counts.get(name, 0) + amount
            if part is not None:
                part[name] = part.get(name, 0) + amount
            else:
                found.origins.setdefault(name, []).append((place, amount))

    if isinstance(function, cst.Module):
        for node in preorder(function):
            if _GLOBAL[type(node)]:
                for item in node.names:
                    add(item.name, UNRECORDED)
        stack: list[cst.CSTNode] = list(reversed(function.body))
    else:
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            add(param.name, UNRECORDED)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                add(star.name, UNRECORDED)
        stack = [function.body]
    while stack:
        node = stack.pop()
        place = found.order[id(node)] = len(found.order)
        if not _BINDING_OR_SCOPE[type(node)]:
            stack.extend(reversed(children(node)))
            continue
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            add(node.name, UNRECORDED)
            for inner in preorder(node):  # a nested function may rebind a name through ``nonlocal``
                if _NONLOCAL[type(inner)]:
                    for item in inner.names:
                        add(item.name, UNRECORDED)
            continue
        if isinstance(node, cst.Lambda):  # comprehensions are walked: a ``:=`` in one binds here
            continue
        if isinstance(node, cst.Assign):
            kept = len(node.targets) == 1 and _keeps_device(node.targets[0].target, node.value)
            for target in node.targets:
                add(target.target, 1 if isinstance(target.target, cst.Name) else UNRECORDED, found.kept if kept else None)
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            add(node.target, 1 if isinstance(node.target, cst.Name) else UNRECORDED)
        elif isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name):
            add(node.target, UNRECORDED, found.kept)  # ``h *= s``: a tensor changed in place
        elif isinstance(node, (cst.AugAssign, cst.For, cst.NamedExpr)):
            add(node.target, UNRECORDED)
        elif isinstance(node, cst.AsName):
            add(node.name, UNRECORDED)
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            for item in node.names:
                add(item.name, UNRECORDED)
        elif isinstance(node, cst.Del):
            add(node.target, UNRECORDED, found.deleted)
        stack.extend(reversed(children(node)))  # in source order
    return found


def _keeps_device(target: cst.BaseExpression, value: cst.BaseExpression) -> bool:
    """``h = h.view(-1, d)``, ``h = h.float().contiguous()``: the name rebound to what
    device-preserving methods make of its own tensor."""
    if not isinstance(target, cst.Name) or not isinstance(value, cst.Call):
        return False
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        if value.func.attr.value not in apis.DEVICE_PRESERVING_METHODS:
            return False
        value = value.func.value
    return isinstance(value, cst.Name) and value.value == target.value
