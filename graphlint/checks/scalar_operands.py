"""0-d host tensors the NPU takes as scalars, and empty tensors, which moving copies nothing.

Gemma 2 scales its embeddings with ``normalizer = torch.tensor(self.config.hidden_size**0.5,
dtype=h.dtype)`` then ``h *= normalizer``: a tensor made on the host without ``device=`` (GL203),
but torch_npu's ``mul_`` hands a 0-d CPU ``other`` to ``aclnnInplaceMuls`` as a scalar: no copy,
and in a capture a constant of the graph, the same on every replay because the value is. Which
op takes which operand so is data: ``npu_scalar_operands.toml``, read once. A mixin of the
extractor's walk:

- ``scalar_operand_only(factory)``: the factory makes a 0-d tensor of a number that is the same
  in every call (a literal, ``self.config.x ** 0.5``, ``torch.finfo(dt).min``: not a parameter
  or a value of the batch, which a capture would freeze), and every use of it, directly, through
  host elementwise ops (``torch.sqrt(torch.tensor(2.0))``) or through a name bound once to it in
  the function, is an operand the table calls ``scalar``;
- ``empty_tensor(expr)``: a tensor of no elements (``torch.tensor([])``, ``torch.as_tensor(x)``
  of an ``x`` empty in every capture (``empty_values.py``), ``torch.zeros(0, n)``): torch_npu's
  ``copy_`` returns at once when the destination has no elements (Ascend/pytorch
  ``CopyKernelOpApi.cpp``, ``NPUNativeOpApiFunctions::copy_``), so moving it copies nothing;
- ``moved_at_once(factory)``: the factory is the receiver of a move to the device.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import libcst as cst

from graphlint.checks.capture_values import Modes
from graphlint.checks.syntax import children, dotted_name, keyword, positional
from graphlint.tomlfile import read_toml

TABLE = Path(__file__).with_name("npu_scalar_operands.toml")

Emptiness = Literal["always", "capture"]  # empty in every call, or in every capture mode

_OPERATORS: dict[type[cst.CSTNode], str] = {
    cst.Multiply: "*", cst.Divide: "/", cst.Add: "+", cst.Subtract: "-",
    cst.MultiplyAssign: "*=", cst.DivideAssign: "/=", cst.AddAssign: "+=", cst.SubtractAssign: "-=",
}
# Operators no sequence supports: of a number and a non-tensor they make a number.
_NUMERIC_ONLY = (cst.Power, cst.Divide, cst.FloorDivide, cst.Subtract)
_ZERO_DIM_SHAPED = frozenset({"torch.zeros", "torch.ones", "torch.full"})  # (size, ...): () is 0-d
_SIZED = frozenset({"torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.rand", "torch.randn"})
_NUMBER_INFO = frozenset({"torch.finfo", "torch.iinfo"})
_NAME_HOPS = 3  # names bound to names bound to the factory, followed at most


@dataclass(frozen=True)
class OperandTable:
    """``npu_scalar_operands.toml``, indexed: the operands a 0-d CPU tensor is a scalar in."""

    functions: dict[str, frozenset[str]]
    methods: dict[str, frozenset[str]]
    operators: dict[str, frozenset[str]]
    host_functions: frozenset[str]
    host_methods: frozenset[str]


@cache
def operand_table() -> OperandTable:
    data = read_toml(TABLE)
    functions: dict[str, frozenset[str]] = {}
    methods: dict[str, frozenset[str]] = {}
    operators: dict[str, frozenset[str]] = {}
    for op in data["op"]:
        scalar = frozenset(op.get("scalar", ()))
        for names, index in ((op.get("functions", ()), functions), (op.get("methods", ()), methods), (op.get("operators", ()), operators)):
            index.update((name, scalar) for name in names)
    host = data["host_elementwise"]
    return OperandTable(functions, methods, operators, frozenset(host["functions"]), frozenset(host["methods"]))


class ScalarOperands:
    """The extractor's part that knows 0-d host operands and empty tensors (it provides
    ``qualify``, the scopes, ``on_module_device`` and ``_empty_modes``)."""

    qualify: Callable[[cst.BaseExpression], str | None]
    facts: Any
    function_scope: Any
    capture_modes: Modes
    on_module_device: Callable[[cst.BaseExpression], bool]
    _empty_modes: Callable[[cst.BaseExpression, Modes, cst.CSTNode], Modes]
    parent_maps: dict[int, dict[int, cst.CSTNode]]  # id(function) → id(node) → its parent

    # ---- 0-d operands -------------------------------------------------------------------------
    def scalar_operand_only(self, factory: cst.Call) -> bool:
        if not self._fixed_zero_dim(factory):
            return False
        parents = self._parents()
        return parents is not None and self._used_as_scalar(factory, parents, 0)

    def _fixed_zero_dim(self, factory: cst.Call) -> bool:
        """``torch.tensor(2.0)``, ``torch.full((), x)``: a 0-d tensor of a fixed number."""
        name = self.qualify(factory.func)
        args = positional(factory)
        if name == "torch.tensor":
            data = args[0] if args else keyword(factory, "data")
            return data is not None and self._fixed_number(data.value)
        if name not in _ZERO_DIM_SHAPED or not args:
            return False
        size = args[0].value
        if not (isinstance(size, (cst.Tuple, cst.List)) and not size.elements):
            return False
        fill = args[1] if len(args) > 1 else keyword(factory, "fill_value")
        return name != "torch.full" or (fill is not None and self._fixed_number(fill.value))

    def _fixed_number(self, expr: cst.BaseExpression) -> bool:
        """A Python number the same in every call: a literal, ``math.pi``, ``torch.finfo(dt).min``
        (the dtype is fixed in a graph), ``float()`` / ``math.*()`` of such, and arithmetic of
        such and of ``self``'s attributes (``self.config.hidden_size ** 0.5``) with operators no
        sequence has (a list makes a ``TypeError``, and ``torch.tensor`` of a tensor is not
        written: torch warns to ``clone().detach()`` instead)."""
        if isinstance(expr, (cst.Integer, cst.Float)):
            return True
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
            return self._fixed_operand(expr.expression)
        if isinstance(expr, cst.BinaryOperation):
            if isinstance(expr.operator, _NUMERIC_ONLY):
                return self._fixed_operand(expr.left) and self._fixed_operand(expr.right)
            return self._fixed_number(expr.left) and self._fixed_number(expr.right)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Call):
            return self.qualify(expr.value.func) in _NUMBER_INFO
        name = self.qualify(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        if name is not None:
            return name.startswith("math.")
        if isinstance(expr, cst.Call) and not any(arg.star for arg in expr.args):
            callee = self.qualify(expr.func) or ""
            numeric = callee in ("float", "int") and isinstance(expr.func, cst.Name) or callee.startswith("math.")
            return numeric and all(self._fixed_operand(arg.value) for arg in expr.args)
        return False

    def _fixed_operand(self, expr: cst.BaseExpression) -> bool:
        """A fixed number, or an attribute of ``self`` that is no parameter or buffer (set when
        the module was made: its config)."""
        if self._fixed_number(expr):
            return True
        base = expr
        while isinstance(base, cst.Attribute):
            base = base.value
        return expr is not base and isinstance(base, cst.Name) and base.value == "self" and not self.on_module_device(expr)

    def _used_as_scalar(self, node: cst.BaseExpression, parents: dict[int, cst.CSTNode], hops: int) -> bool:
        """Whether every use of the 0-d host value ``node`` is a ``scalar`` operand (through host
        elementwise ops, and names bound once to it)."""
        table = operand_table()
        current: cst.CSTNode = node
        while True:
            parent = parents.get(id(current))
            if isinstance(parent, cst.Arg) and parent.value is current:
                call = parents.get(id(parent))
                if not isinstance(call, cst.Call):
                    return False
                position = _position(call, parent, is_function=not self._is_method(call))
                if position == "self" and self.qualify(call.func) in table.host_functions:
                    current = call  # torch.sqrt(t): a 0-d host tensor again
                    continue
                return position == "other" and "other" in self._call_scalars(call, table)
            if isinstance(parent, cst.Attribute) and parent.value is current:
                call = parents.get(id(parent))
                if isinstance(call, cst.Call) and call.func is parent and not call.args and parent.attr.value in table.host_methods:
                    current = call  # t.float(), t.sqrt()
                    continue
                return False
            if isinstance(parent, cst.UnaryOperation):
                current = parent
                continue
            if isinstance(parent, cst.BinaryOperation):
                other = parent.left if parent.right is current else parent.right
                if self._fixed_number(other):
                    current = parent  # 2.0 / t: worked out on the host
                    continue
                symbol = _OPERATORS.get(type(parent.operator))
                return parent.right is current and symbol is not None and "other" in table.operators.get(symbol, ())
            if isinstance(parent, cst.AugAssign):
                symbol = _OPERATORS.get(type(parent.operator))
                return parent.value is current and symbol is not None and "other" in table.operators.get(symbol, ())
            if isinstance(parent, cst.Assign) and parent.value is current and len(parent.targets) == 1 and hops < _NAME_HOPS:
                target = parent.targets[0]
                return isinstance(target.target, cst.Name) and self._reads_as_scalar(target, parents, hops + 1)
            return False

    def _call_scalars(self, call: cst.Call, table: OperandTable) -> frozenset[str]:
        if self._is_method(call):
            return table.methods.get(call.func.attr.value, frozenset())  # type: ignore[attr-defined]
        return table.functions.get(self.qualify(call.func) or "", frozenset())

    def _is_method(self, call: cst.Call) -> bool:
        """``h.mul(t)``: a call of an attribute of a value, not of a module (``torch.mul``)."""
        func = call.func
        if not isinstance(func, cst.Attribute):
            return False
        path = dotted_name(func.value)
        return path is None or path.partition(".")[0] not in self.facts.imports

    def _reads_as_scalar(self, binding: cst.AssignTarget, parents: dict[int, cst.CSTNode], hops: int) -> bool:
        """``name = <0-d host value>``: whether that is the name's one binding in the function and
        every other occurrence of it a read that uses it as a scalar."""
        name = binding.target.value  # type: ignore[attr-defined]
        scope = self._scope_node()
        stack: list[cst.CSTNode] = [scope] if scope is not None else []
        while stack:
            node = stack.pop()
            stack.extend(children(node))
            if not (isinstance(node, cst.Name) and node.value == name) or node is binding.target:
                continue
            parent = parents.get(id(node))
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue  # x.name
            if isinstance(parent, cst.Arg) and parent.keyword is node:
                continue  # f(name=...)
            if not self._used_as_scalar(node, parents, hops):
                return False  # another binding, a parameter, or a read that is no scalar operand
        return scope is not None

    # ---- empty tensors ------------------------------------------------------------------------
    def empty_tensor(self, expr: cst.BaseExpression) -> Emptiness | None:
        if not isinstance(expr, cst.Call) or any(arg.star for arg in expr.args):
            return None
        name = self.qualify(expr.func)
        args = positional(expr)
        if name in ("torch.tensor", "torch.as_tensor"):
            data = args[0] if args else keyword(expr, "data")
            return None if data is None else self._empty_data(data.value)
        if name not in _SIZED or not args:
            return None
        first = args[0].value
        sizes = [e.value for e in first.elements] if isinstance(first, (cst.Tuple, cst.List)) else [a.value for a in args]
        if name == "torch.full":
            sizes = sizes if isinstance(first, (cst.Tuple, cst.List)) else []
        return "always" if any(isinstance(size, cst.Integer) and size.evaluated_value == 0 for size in sizes) else None

    def _empty_data(self, data: cst.BaseExpression) -> Emptiness | None:
        if isinstance(data, (cst.List, cst.Tuple)) and not data.elements:
            return "always"
        modes = self.capture_modes
        if modes and self._empty_modes(data, modes, data) == modes:
            return "capture"
        return None

    def moved_at_once(self, factory: cst.Call, moves: Callable[[cst.Call], bool]) -> bool:
        """Whether ``factory`` is the receiver of a call that ``moves`` (``.to(d)``)."""
        parents = self._parents()
        attribute = parents.get(id(factory)) if parents is not None else None
        call = parents.get(id(attribute)) if parents is not None and attribute is not None else None
        return isinstance(attribute, cst.Attribute) and isinstance(call, cst.Call) and call.func is attribute and moves(call)

    # ---- where nodes are ----------------------------------------------------------------------
    def _scope_node(self) -> cst.CSTNode | None:
        """The function (or module) the walk is in; None in a lambda."""
        locals_ = self.function_scope.capture_locals
        return locals_.function if locals_ is not None else None

    def _parents(self) -> dict[int, cst.CSTNode] | None:
        scope = self._scope_node()
        if scope is None:
            return None
        parents = self.parent_maps.get(id(scope))
        if parents is None:
            parents = self.parent_maps[id(scope)] = {}
            stack = [scope]
            while stack:
                node = stack.pop()
                for child in children(node):
                    parents[id(child)] = node
                    stack.append(child)
        return parents


def _position(call: cst.Call, arg: cst.Arg, is_function: bool) -> str | None:
    """``self`` or ``other``: where ``arg`` is in ``torch.mul(a, b)`` (``is_function``) or
    ``a.mul(b)``."""
    if arg.keyword is not None:
        return {"input": "self", "other": "other"}.get(arg.keyword.value)
    if arg.star:
        return None
    index = positional(call).index(arg)
    if not is_function:
        index += 1  # the receiver is self
    return ("self", "other")[index] if index < 2 else None
