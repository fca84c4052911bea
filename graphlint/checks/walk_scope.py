"""What each scope of the walk keeps of its names (``WalkScope``), and the small questions about
an expression's shape that the walk and its bindings (``local_bindings.py``) both ask."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import libcst as cst

from graphlint.checks.capture_values import CaptureLocals
from graphlint.checks.scopes import Scope


@dataclass
class WalkScope(Scope):
    dynamic: dict[str, Literal["shape", "param"]] = field(default_factory=dict)
    masks: set[str] = field(default_factory=set)
    devices: dict[str, str] = field(default_factory=dict)  # tensor name → the device it was made on
    vectors: set[str] = field(default_factory=set)  # names of tensors known to be 1-D
    tensor_params: set[str] = field(default_factory=set)
    configs: dict[str, bool] = field(default_factory=dict)  # CompilerConfig var → capture mode
    backends: dict[str, str | None] = field(default_factory=dict)  # npu backend var → config var
    made: dict[str, str] = field(default_factory=dict)  # name → the callable that made its value
    values: set[str] = field(default_factory=set)  # names bound to a tensor's reduced value
    computed: set[str] = field(default_factory=set)  # names bound here to a call, subscript or arithmetic
    module_outputs: set[str] = field(default_factory=set)  # names bound to a submodule's output: self.embed(x)
    module_params: set[str] = field(default_factory=set)  # parameters annotated as a module: layer: nn.Module
    definition: cst.FunctionDef | None = None  # the ``def`` of a function scope
    # id() of the reads of a parameter that hold what the call handed over, worked out when a
    # rule first asks (incoming_parameters.py)
    incoming: frozenset[int] | None = None
    conditions: set[str] = field(default_factory=set)  # names bound to a tensor's truth: p < self.layerdrop
    displays: set[str] = field(default_factory=set)  # names bound to a list, tuple or set display or comprehension
    # names bound, in any branch, to a capture context manager: ``graph_ctx = torch.npu.graph``
    capture_contexts: set[str] = field(default_factory=set)
    loops: int = 0
    default_device: str | None = None  # in ``with x.device:``, where factories make their tensors
    capture_locals: CaptureLocals | None = None  # the bindings a capture runs (capture_values.py)
    # names bound to what a call returns: name → (call ordinal, element; -1 all, a plain binding) (returned_none.py)
    returned: dict[str, tuple[int, int, bool]] = field(default_factory=dict)
    # names bound by unpacking a parameter: name → (parameter, element) (returned_elements.py)
    unpacked: dict[str, tuple[str, int]] = field(default_factory=dict)
    empty: dict[str, frozenset[str]] = field(default_factory=dict)  # name → modes bound empty in (empty_values.py)


def is_self_attribute(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"


def is_method_call(expr: cst.BaseExpression, method: str) -> bool:
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == method
    )


def is_display(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.List, cst.Tuple, cst.Set, cst.ListComp, cst.SetComp))
