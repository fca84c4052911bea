"""What the walk knows at a site: the questions rules ask through ``SiteContext``.

A mixin of ``extract.py``'s extractor. Each scope of the walk (``WalkScope``) keeps what its
names were bound to (dynamic ints, boolean masks, devices, 1-D tensors, reduced tensor values,
what made them); the methods here answer from that for any expression: is it a dynamic int, a
mask, on which device, a tensor's value, made by what, on the model's device.
"""

from __future__ import annotations

from typing import Any, Literal

import libcst as cst

from graphlint.checks import apis, dynamo
from graphlint.checks.capture_devices import device_modes
from graphlint.checks.capture_values import Local, Modes
from graphlint.checks.incoming_parameters import incoming_reads
from graphlint.checks.syntax import dotted_name, keyword, positional, string_value
from graphlint.checks.walk_scope import is_display, is_method_call, is_self_attribute


ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo, cst.Divide, cst.Power)

SOURCE_TEXT = cst.Module(body=[])  # renders an expression's source text

VALUE_COMPARISONS = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)


class SiteValues:
    """The ``SiteContext`` half of the extractor (it provides ``facts``, the scopes, the
    compile entries and ``made_attributes``)."""

    facts: Any
    function_scope: Any
    module_scope: Any
    stores: dict[int, cst.BaseExpression]
    entry_nodes: dict[int, int]
    nesting_safe: set[int]
    made_attributes: dict[tuple[str, str], str]
    moved_once: set[int]
    module_state_names: frozenset[str]  # registered on a module handed in: layer.register_parameter("w", p)
    options: Any  # the ExtractOptions: what [tool.graphlint] and the presets add
    capture_modes: Modes  # compile_branches.py
    _captured_name: Local  # compile_branches.py
    # id(expression) → (the expression, kept so that its id is not reused; its qualified name).
    # Every rule's ``visit_Call`` asks for its callee's; the answer changes only with the
    # imports, and the import handlers clear this.
    qualified: dict[int, tuple[cst.BaseExpression, str | None]]

    @property
    def in_loop(self) -> bool:
        return self.function_scope.loops > 0

    @property
    def function_name(self) -> str | None:
        scope = self.function_scope
        return scope.qualname.rsplit(".", 1)[-1] if scope.kind == "function" else None

    def qualify(self, expr: cst.BaseExpression) -> str | None:
        known = self.qualified.get(id(expr))
        if known is not None:
            return known[1]
        name = self._qualify(expr)
        self.qualified[id(expr)] = (expr, name)
        return name

    def _qualify(self, expr: cst.BaseExpression) -> str | None:
        name = dotted_name(expr)
        if name is None:
            return None
        head, dot, rest = name.partition(".")
        target = self.facts.imports.get(head)
        if target is not None:
            name = target + dot + rest
        for prefix, canonical in apis.CANONICAL_PREFIXES:
            if name.startswith(prefix):
                return canonical + name[len(prefix) :]
        return name

    def dynamic_int(self, expr: cst.BaseExpression) -> Literal["shape", "param"] | None:
        if isinstance(expr, cst.Name):
            return self.function_scope.dynamic.get(expr.value)
        if isinstance(expr, cst.Subscript):
            value = expr.value
            if isinstance(value, cst.Attribute) and value.attr.value in apis.SHAPE_ATTRIBUTES:
                return "shape"
            if is_method_call(value, "size") and not value.args:  # type: ignore[union-attr]
                return "shape"
            return None
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in apis.SHAPE_METHODS:
                return "shape" if (expr.args or func.attr.value == "numel") else None
            name = self.qualify(func)
            args = positional(expr)
            if name == "len" and len(args) == 1 and isinstance(args[0].value, cst.Name):
                return "shape" if args[0].value.value in self.function_scope.tensor_params else None
            if name == "int" and len(args) == 1:
                return self.dynamic_int(args[0].value)
            return None
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, ARITHMETIC):
            return self.dynamic_int(expr.left) or self.dynamic_int(expr.right)
        if isinstance(expr, cst.UnaryOperation):
            return self.dynamic_int(expr.expression)
        return None

    def is_mask(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Comparison):
            return True
        if isinstance(expr, cst.Name):
            return expr.value in self.function_scope.masks
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
            return self.is_mask(expr.expression)
        if isinstance(expr, cst.BinaryOperation) and isinstance(
            expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)
        ):
            return self.is_mask(expr.left) or self.is_mask(expr.right)
        if isinstance(expr, cst.Call):
            if is_method_call(expr, "bool"):
                return True
            name = self.qualify(expr.func) or ""
            return name in ("torch.isnan", "torch.isinf", "torch.isfinite") or name.startswith(
                "torch.logical_"
            )
        return False

    def compile_entry_at(self, node: cst.CSTNode) -> int | None:
        return self.entry_nodes.get(id(node))

    def entry_nests_safely(self, entry: int) -> bool:
        return entry in self.nesting_safe

    def assigned_value(self, target: cst.BaseExpression) -> cst.BaseExpression | None:
        return self.stores.get(id(target))

    def known_device(self, expr: cst.BaseExpression) -> str | None:
        if isinstance(expr, (cst.Comparison, cst.BinaryOperation)):
            return self._operands_device(expr)
        name = expr.value if isinstance(expr, cst.Name) else expr.attr.value if isinstance(expr, cst.Attribute) else None
        if name is not None and name.endswith(apis.HOST_NAME_SUFFIXES):
            return apis.HOST_DEVICE
        if isinstance(expr, cst.Name):
            return self.function_scope.devices.get(expr.value)
        if not isinstance(expr, cst.Call):
            return None
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value == "cpu" and not expr.args:
            return apis.HOST_DEVICE
        if isinstance(func, cst.Attribute) and func.attr.value == "to":
            device = keyword(expr, "device") or (positional(expr)[0] if positional(expr) else None)
            if device is None or _is_dtype(device.value):
                return self.known_device(func.value)  # .to(dtype): where it was
            return self.device_text(device.value)
        if isinstance(func, cst.Attribute) and func.attr.value in apis.DEVICE_PRESERVING_METHODS:
            return self.known_device(func.value)  # mask.unsqueeze(1).type(torch.bool)
        if self.qualify(func) in apis.TENSOR_FACTORIES:
            device = keyword(expr, "device")
            if device is not None:
                return self.device_text(device.value)
            pinned = keyword(expr, "pin_memory")
            if pinned is not None and isinstance(pinned.value, cst.Name) and pinned.value.value == "True":
                return apis.HOST_DEVICE
            return self.function_scope.default_device
        if self.qualify(func) in apis.LIKE_FACTORIES and expr.args and expr.args[0].keyword is None:
            device = keyword(expr, "device")
            if device is not None:
                return self.device_text(device.value)
            # where its input is: ``torch.zeros_like(h).to(h.device)`` copies nothing
            source = expr.args[0].value
            return self.known_device(source) or f"{SOURCE_TEXT.code_for_node(source)}.device"
        return None

    def _operands_device(self, expr: cst.Comparison | cst.BinaryOperation) -> str | None:
        """``a >= b``, ``a * b``: torch computes on the device of its tensor operands (a host
        operand beside a device one is a 0-d scalar, or an error). A device operand decides; the
        host only when every operand is known to be there."""
        # Nested operators are flattened here, not recursed into: ``a + b + ...`` may be long.
        operands: list[cst.BaseExpression] = []
        pending: list[cst.BaseExpression] = [expr]
        while pending:
            node = pending.pop()
            if isinstance(node, cst.Comparison):
                pending += [node.left, *(c.comparator for c in node.comparisons)]
            elif isinstance(node, cst.BinaryOperation):
                pending += [node.left, node.right]
            else:
                operands.append(node)
        devices = {self.known_device(operand) for operand in operands}
        on_device = devices - {None, apis.HOST_DEVICE}
        if len(on_device) == 1:
            return on_device.pop()
        return apis.HOST_DEVICE if devices == {apis.HOST_DEVICE} else None

    def compiles_eagerly(self, options: cst.Call) -> bool:
        backend = keyword(options, "backend")
        if backend is None:
            return False
        if string_value(backend.value) in apis.EAGER_BACKENDS:
            return True
        return self.qualify(backend.value) in self.options.eager_backends

    def host_work(self, expr: cst.BaseExpression) -> list[cst.Call] | None:
        """The factories ``expr`` is computed from when it is host work alone, else None: a
        factory without ``device=`` (it makes its tensor on the host) or on the host on purpose,
        a name known to hold a host tensor, and ``torch.*`` functions and tensor methods of
        these and of Python constants (``torch.quantile(torch.tensor(times), q=0.5)``)."""
        if isinstance(expr, cst.Name):
            return [] if self.known_device(expr) == apis.HOST_DEVICE else None
        if not isinstance(expr, cst.Call):
            return None
        name = self.qualify(expr.func)
        if name in apis.TENSOR_FACTORIES:
            device = self.known_device(expr)
            if device is None and keyword(expr, "device") is None:
                return [expr]
            return [] if device == apis.HOST_DEVICE else None
        func = expr.func
        tensors = [arg.value for arg in expr.args]
        if isinstance(func, cst.Attribute) and (name is None or not name.startswith("torch.")):
            if func.attr.value not in apis.DEVICE_PRESERVING_METHODS and func.attr.value not in dynamo.reductions():
                return None
            tensors.insert(0, func.value)  # t.float(), t.sum(): where t is
        elif name is None or not name.startswith("torch.") or name.startswith(apis.NOT_INPUT_DEVICE_NAMESPACES):
            return None
        factories: list[cst.Call] = []
        tensor_inputs = [value for value in tensors if not _is_constant(value)]
        for value in tensor_inputs:
            inputs = self.host_work(value)
            if inputs is None:
                return None
            factories += inputs
        return factories if tensor_inputs else None

    def device_text(self, expr: cst.BaseExpression) -> str:
        text = string_value(expr)
        if isinstance(expr, cst.Call) and self.qualify(expr.func) == "torch.device" and expr.args:
            text = string_value(expr.args[0].value)
        if text is not None:
            return text.split(":")[0]
        return SOURCE_TEXT.code_for_node(expr)

    def is_vector(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Name):
            return expr.value in self.function_scope.vectors
        if not isinstance(expr, cst.Call):
            return False
        func = expr.func
        if self.qualify(func) in apis.VECTOR_FACTORIES:
            return True
        if not isinstance(func, cst.Attribute):
            return False
        args = positional(expr)
        if func.attr.value in apis.FLATTENING_METHODS and not expr.args:
            return True
        return (
            func.attr.value in apis.RESHAPE_METHODS
            and len(expr.args) == 1
            and len(args) == 1
            and SOURCE_TEXT.code_for_node(args[0].value) == "-1"
        )

    def is_tensor_value(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in dynamo.reductions():
                head = func.value
                while isinstance(head, (cst.Attribute, cst.Subscript, cst.Call)):
                    head = head.func if isinstance(head, cst.Call) else head.value
                if isinstance(head, cst.Name) and head.value in self.facts.imports:
                    return self.qualify(func) in dynamo.reduction_functions()  # torch.sum(x), not np.sum
                return not isinstance(head, (cst.SimpleString, cst.List, cst.Tuple, cst.Dict, cst.Set))
            return False
        if isinstance(expr, cst.Name):
            scope = self.function_scope
            return expr.value in scope.values or expr.value in scope.tensor_params
        if isinstance(expr, cst.Subscript):  # position_ids[0][0]
            return self.is_tensor_value(expr.value) if isinstance(expr.value, (cst.Name, cst.Subscript)) else False
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, ARITHMETIC):
            return self.is_tensor_value(expr.left) or self.is_tensor_value(expr.right)
        if isinstance(expr, cst.UnaryOperation) and not isinstance(expr.operator, cst.Not):
            return self.is_tensor_value(expr.expression)
        return False

    def moves_once(self, call: cst.Call) -> bool:
        return id(call) in self.moved_once

    def incoming_parameter(self, expr: cst.BaseExpression) -> str | None:
        scope = self.function_scope
        if not isinstance(expr, cst.Name) or scope.definition is None:
            return None
        if scope.incoming is None:  # asked at few sites: a walk of the body only for those
            scope.incoming = incoming_reads(scope.definition)
        return expr.value if id(expr) in scope.incoming else None

    def on_capture_device(self, expr: cst.BaseExpression) -> bool:
        modes = self.capture_modes
        return bool(modes) and device_modes(expr, self.qualify, self.options, modes, self._captured_name) == modes

    def on_module_device(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Name):
            return expr.value in self.function_scope.module_outputs
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in apis.DEVICE_PRESERVING_METHODS:
                return self.on_module_device(func.value)  # input_scale.expand(m, 1): where it was
            return self._moves_with_model(func)
        if isinstance(expr, cst.Subscript):  # an element or slice of a parameter or buffer: where it is
            value = expr.value
            if is_self_attribute(value):
                return self.made_by(value) in apis.MODULE_TENSOR_MAKERS
            return isinstance(value, cst.Name) and self.on_module_device(value)
        if (
            isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name)
            and expr.value.value in self.function_scope.module_params and expr.attr.value in self.module_state_names
        ):
            return True  # layer.input_scale, registered on the layer in this file (create_weights)
        root = expr
        while isinstance(root, cst.Attribute) and not is_self_attribute(root):
            root = root.value
        return self._moves_with_model(root)

    def _moves_with_model(self, expr: cst.BaseExpression) -> bool:
        """``self.x`` that ``__init__`` made with something other than a tensor factory: a
        submodule (its output is on the module's device), ``nn.Parameter(...)`` or a registered
        buffer. A plain tensor attribute (``self.cache = torch.zeros(n)``) is not moved by
        ``model.to()``, and a method of the class (``self.helper``) may make host tensors."""
        maker = self.made_by(expr) if is_self_attribute(expr) else None
        return maker is not None and maker not in apis.TENSOR_FACTORIES

    def inherited_attribute(self, expr: cst.BaseExpression) -> list[str] | None:
        class_name = self.function_scope.class_name
        if not is_self_attribute(expr) or class_name is None:
            return None
        attribute = expr.attr.value  # type: ignore[attr-defined]
        return None if (class_name, attribute) in self.made_attributes else [class_name, attribute]

    def built_attribute(self, expr: cst.BaseExpression) -> list[str] | None:
        class_name = self.function_scope.class_name
        if not is_self_attribute(expr) or class_name is None:
            return None
        return [class_name, expr.attr.value]  # type: ignore[attr-defined]

    def computed_here(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Name) and expr.value in self.function_scope.computed

    def made_by(self, expr: cst.BaseExpression) -> str | None:
        if isinstance(expr, cst.Name):
            for scope in (self.function_scope, self.module_scope):
                if expr.value in scope.made:
                    return scope.made[expr.value]
            return None
        class_name = self.function_scope.class_name
        if is_self_attribute(expr) and class_name is not None:
            return self.made_attributes.get((class_name, expr.attr.value))  # type: ignore[attr-defined]
        return None

    def is_tensor_condition(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Comparison):
            if not all(isinstance(c.operator, VALUE_COMPARISONS) for c in expr.comparisons):
                return False  # ``t is None``, ``k in d``: no tensor is read
            return any(self._is_tensor(side) for side in (expr.left, *(c.comparator for c in expr.comparisons)))
        if isinstance(expr, cst.Name):
            return expr.value in self.function_scope.conditions
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            return self.is_tensor_condition(expr.expression)
        if isinstance(expr, cst.BooleanOperation):
            return self.is_tensor_condition(expr.left) or self.is_tensor_condition(expr.right)
        return False

    def is_python_container(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Name):
            return expr.value in self.function_scope.displays
        return is_display(expr)

    def _is_tensor(self, expr: cst.BaseExpression) -> bool:
        """A tensor's value (``is_tensor_value``) or a tensor a factory made (``torch.rand([])``,
        or a name bound to one)."""
        if self.is_tensor_value(expr):
            return True
        if isinstance(expr, cst.Call):
            return self.qualify(expr.func) in apis.TENSOR_FACTORIES
        return isinstance(expr, cst.Name) and self.made_by(expr) in apis.TENSOR_FACTORIES


def _is_dtype(expr: cst.BaseExpression) -> bool:
    """``torch.float32``, ``x.dtype``: what ``.to(...)`` converts to, not where."""
    return isinstance(expr, cst.Attribute) and (expr.attr.value in apis.DTYPE_NAMES or expr.attr.value == "dtype")


def _is_constant(expr: cst.BaseExpression) -> bool:
    """A Python constant an op takes beside its tensors: ``q=0.5``, ``dim=-1``, ``True``."""
    if isinstance(expr, cst.UnaryOperation):
        return _is_constant(expr.expression)
    if isinstance(expr, cst.Name):
        return expr.value in ("True", "False", "None")
    return isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString))
