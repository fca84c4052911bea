"""Names a module binds only where the platform checked never runs: reading one raises NameError.

sglang's Triton MoE alignment (``moe_align_block_size.py``) imports its kernel under a platform
test, ``if _is_cuda or _is_hip or _is_xpu or _is_musa: from sgl_kernel import
moe_align_block_size as sgl_moe_align_block_size``, and calls it in a function. On the NPU every
one of those flags is False (``[platforms.npu]`` of the preset, read through the module's
``_is_cuda = is_cuda()``: ``capture_values.py``), so the name is never bound and the call raises.

A module-level block is *skipped* where the walk enters it with no capture mode left: the branch
of a module-level ``if`` whose test the knowledge decides against every mode (the same decision
the walk makes of a function's branches; the module runs at import, before any capture, and what
it tests there is the platform). A name is unbound on the platform checked where every binding of
it in the module is in a skipped block: imports (``import a.b`` binds ``a``), assignments and
their targets, ``def``, ``class``, loop and ``with`` / ``except`` targets, ``:=``, ``del``,
``match`` captures. A ``global`` statement anywhere in the module, a ``from x import *`` that is
not skipped, a read of ``globals``, ``vars``, ``exec`` or ``sys.modules`` anywhere, a builtin's
name or a dunder leaves the name possibly bound. So does a block the walk has not entered yet: a
module's later statements run at import too, and are counted as bindings until the walk has
decided their block. What another module assigns to this one (``mod.name = f``) is not seen, as
for the module-level values ``capture_values.py`` reads.

A function reads the module's name where neither it nor a function around it binds the name
(their parameters, imports and other bindings: ``function_names``); a class body between does
not count (a method does not see its class's names).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import NamedTuple

import libcst as cst

from graphlint.checks.syntax import NodeTypes, children, dotted_name, preorder

_BUILTIN_NAMES = frozenset(dir(builtins))
# Node types, tested by type over whole modules (``syntax.NodeTypes``).
_BINDING = NodeTypes(
    cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.Del, cst.AsName, cst.FunctionDef,
    cst.ClassDef, cst.TypeAlias, cst.Global, cst.Nonlocal, cst.MatchAs, cst.MatchStar, cst.MatchMapping, cst.ImportAlias,
)
_OWN_SCOPES = NodeTypes(cst.FunctionDef, cst.ClassDef, cst.Lambda)
_GLOBAL, _NAME, _ATTRIBUTE = NodeTypes(cst.Global), NodeTypes(cst.Name), NodeTypes(cst.Attribute)
_IMPORT_STAR, _INDENTED_BLOCK = NodeTypes(cst.ImportStar), NodeTypes(cst.IndentedBlock)
# Reads that may bind a module's names some other way than a statement of it.
_DYNAMIC_NAMES = frozenset({"globals", "vars", "exec"})


class StatementBindings(NamedTuple):
    """What one top-level statement adds to its module's ``ModuleNames``: each name it binds with
    the module-level blocks around that binding (``id()`` of each, inside the statement), the
    blocks around each ``from x import *``, and whether it may bind any name (a ``global``
    statement, a dynamic binding). Its subtree's alone: kept between texts (``kept_answers.py``)."""

    bindings: tuple[tuple[str, tuple[int, ...]], ...]
    stars: tuple[tuple[int, ...], ...]
    open: bool


class ModuleNames:
    """Where each module-level name of one module is bound: per binding, the module-level blocks
    around it (``id()`` of each), computed once asked; ``kept``: each statement's part, by
    ``id()`` of statements alive while it is (``kept_answers.py``)."""

    def __init__(self, module: cst.Module, kept: dict[int, StatementBindings] | None = None) -> None:
        self.module = module
        self._kept = kept if kept is not None else {}
        self._blocks: dict[str, list[tuple[int, ...]]] | None = None
        self._stars: list[tuple[int, ...]] = []  # the blocks around each ``from x import *``
        self._open = False  # a global statement or a dynamic binding: any name may be bound

    def unbound(self, name: str, skipped: set[int]) -> bool:
        """Whether every binding of ``name`` is in a block of ``skipped`` (the module-level blocks
        the walk entered in no capture mode), and there is one."""
        blocks = self._bindings()
        if self._open or name in _BUILTIN_NAMES or (name.startswith("__") and name.endswith("__")):
            return False
        chains = blocks.get(name)
        if not chains:
            return False
        return all(_skipped(chain, skipped) for chain in (*chains, *self._stars))

    def _bindings(self) -> dict[str, list[tuple[int, ...]]]:
        if self._blocks is not None:
            return self._blocks
        self._blocks = {}
        for statement in self.module.body:
            part = self._kept.get(id(statement))
            if part is None:
                part = self._kept[id(statement)] = statement_bindings(statement)
            for name, chain in part.bindings:
                self._blocks.setdefault(name, []).append(chain)
            self._stars.extend(part.stars)
            self._open = self._open or part.open
        return self._blocks


def statement_bindings(statement: cst.BaseStatement) -> StatementBindings:
    """The part of a module's ``ModuleNames`` that ``statement`` (one of its top-level ones) makes."""
    is_open = False
    for node in preorder(statement):
        node_type = type(node)
        if _GLOBAL[node_type] or (_NAME[node_type] and node.value in _DYNAMIC_NAMES) or (  # type: ignore[attr-defined]
            _ATTRIBUTE[node_type] and dotted_name(node) == "sys.modules"  # type: ignore[arg-type]
        ):
            is_open = True
    bindings: list[tuple[str, tuple[int, ...]]] = []
    stars: list[tuple[int, ...]] = []
    pending: list[tuple[cst.CSTNode, tuple[int, ...]]] = [(statement, ())]
    while pending:
        node, chain = pending.pop()
        node_type = type(node)
        if _IMPORT_STAR[node_type]:
            stars.append(chain)
        bindings.extend((name, chain) for name in bound_names(node))
        if _OWN_SCOPES[node_type]:
            continue  # their bodies bind names of their own scopes
        inner = (*chain, id(node)) if _INDENTED_BLOCK[node_type] else chain
        pending.extend((child, inner) for child in children(node))
    return StatementBindings(tuple(bindings), tuple(stars), is_open)


def function_names(function: cst.FunctionDef) -> frozenset[str]:
    """The names ``function`` binds in its own scope: its parameters and what its body binds
    (the names of functions and classes defined in it, not what their bodies bind; a ``:=`` in a
    comprehension binds here)."""
    names: set[str] = set()
    for param in preorder(function.params):
        if isinstance(param, cst.Param):
            names.add(param.name.value)
    pending: list[cst.CSTNode] = [function.body]
    while pending:
        node = pending.pop()
        names.update(bound_names(node))
        if not _OWN_SCOPES[type(node)]:
            pending.extend(children(node))
    return frozenset(names)


def bound_names(node: cst.CSTNode) -> Iterator[str]:
    """The names ``node`` itself binds (a target's every name, so ``a.b = x`` counts ``a``: more
    bindings only keep a name bound)."""
    if not _BINDING[type(node)]:
        return
    targets: list[cst.CSTNode] = []
    if isinstance(node, cst.Assign):
        targets = [target.target for target in node.targets]
    elif isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.Del)):
        targets = [node.target]
    elif isinstance(node, cst.AsName):
        targets = [node.name]
    elif isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.TypeAlias)):
        targets = [node.name]
    elif isinstance(node, (cst.Global, cst.Nonlocal)):
        targets = [item.name for item in node.names]
    elif isinstance(node, (cst.MatchAs, cst.MatchStar)) and node.name is not None:
        targets = [node.name]
    elif isinstance(node, cst.MatchMapping) and node.rest is not None:
        targets = [node.rest]
    elif isinstance(node, cst.ImportAlias) and node.asname is None:
        dotted = dotted_name(node.name)
        if dotted is not None:
            yield dotted.split(".")[0]
    for target in targets:
        for inner in preorder(target):
            if _NAME[type(inner)]:
                yield inner.value


def _skipped(chain: tuple[int, ...], skipped: set[int]) -> bool:
    return any(block in skipped for block in chain)
