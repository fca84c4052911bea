"""What a name or ``self`` attribute is bound to, as the walk passes an assignment.

A mixin of ``extract.py``'s extractor: each binding updates the scope's facts about the name
(``walk_scope.WalkScope``): a dynamic int, a device, a mask, a 1-D tensor, a reduced tensor
value, a submodule's output, computed here or an alias, the callable that made it, a torchair
``CompilerConfig`` or backend; ``self.x = Maker(...)`` and ``self.register_buffer("x", t)``
record what made ``self.x``.
"""

from __future__ import annotations

import ast

from collections.abc import Callable
from typing import Any

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.capture_devices import device_modes
from graphlint.checks.capture_values import Binding, Local, call_results
from graphlint.checks.compile_branches import WalkItem
from graphlint.checks.construction_stores import OTHER, attribute_targets, moves_itself, stored_value
from graphlint.checks.walk_scope import WalkScope, is_display, is_method_call, is_self_attribute
from graphlint.checks.syntax import children, keyword, positional, string_value



class LocalBindings:
    """The binding half of the extractor (it provides the scopes, ``stores``,
    ``made_attributes`` and the ``SiteValues`` questions)."""

    scope: Any
    function_scope: Any
    module_scope: Any
    stores: dict[int, cst.BaseExpression]
    made_attributes: dict[tuple[str, str], str]
    facts: Any
    qualify: Callable[[cst.BaseExpression], str | None]
    dynamic_int: Callable[[cst.BaseExpression], Any]
    known_device: Callable[[cst.BaseExpression], str | None]
    is_mask: Callable[[cst.BaseExpression], bool]
    is_vector: Callable[[cst.BaseExpression], bool]
    is_tensor_value: Callable[[cst.BaseExpression], bool]
    is_tensor_condition: Callable[[cst.BaseExpression], bool]
    _moves_with_model: Callable[[cst.BaseExpression], bool]
    on_module_device: Callable[[cst.BaseExpression], bool]
    capture_modes: frozenset[str]  # compile_branches.py
    _true_modes: Callable[[cst.BaseExpression, frozenset[str]], frozenset[str] | None]  # compile_branches.py
    _none_modes: Callable[[cst.BaseExpression, frozenset[str]], frozenset[str] | None]  # compile_branches.py
    _captured_name: Local  # compile_branches.py
    _note_empty: Callable[[WalkScope, str, cst.BaseExpression], None]  # empty_values.py
    _note_returned: Callable[[WalkScope, list[cst.BaseExpression], cst.BaseExpression], None]  # returned_none.py
    _note_unpacked: Callable[[WalkScope, list[cst.BaseExpression], cst.BaseExpression], None]  # returned_elements.py

    def _on_assign(self, node: cst.CSTNode) -> list[WalkItem] | None:
        """The targets are bound after the statement's nodes are walked, as Python binds them
        after evaluating the value: in ``idxs = np.array(idxs)`` the rules read the ``idxs``
        the call is given (a list), not the array it makes."""
        assert isinstance(node, (cst.Assign, cst.AnnAssign))
        value = node.value
        if value is None:
            return None
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        for target in targets:
            if isinstance(target, cst.Subscript):
                self.stores[id(target)] = value  # what a store writes, asked while its target is walked
        scope = self.function_scope
        return [*children(node), lambda: self._bind_targets(scope, targets, value)]

    def _bind_targets(self, scope: WalkScope, targets: list[cst.BaseExpression], value: cst.BaseExpression) -> None:
        self._note_returned(scope, targets, value)
        self._note_attribute_stores(scope, targets, value)
        self._note_unpacked(scope, targets, value)
        for target in targets:
            if isinstance(target, cst.Name):
                if self.scope.kind != "class":  # class attributes are not names in scope
                    self._bind_name(scope, target.value, value)
                    self._note_empty(scope, target.value, value)
                    if scope.capture_locals is not None:  # what it is in a capture (capture_values.py)
                        modes = self.capture_modes
                        results = call_results(value, self.qualify, self.options)
                        on_device = device_modes(value, self.qualify, self.options, modes, self._captured_name)
                        binding = Binding(
                            modes, self._true_modes(value, modes), self._none_modes(value, modes), results, on_device
                        )
                        scope.capture_locals.record(target.value, binding)
            elif isinstance(target, (cst.Tuple, cst.List)) and self._is_shape_tuple(value):
                for element in target.elements:
                    if isinstance(element.value, cst.Name):
                        scope.dynamic[element.value.value] = "shape"
            elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
                owner = target.value.value
                if owner == "self" and scope.class_name is not None:
                    if isinstance(value, cst.Call) and (maker := self.qualify(value.func)):
                        self.made_attributes[scope.class_name, target.attr.value] = maker
                elif owner in self._config_scope(owner).configs and target.attr.value == "mode":
                    self._config_scope(owner).configs[owner] = string_value(value) in apis.CAPTURE_MODES

    def _note_attribute_stores(self, scope: WalkScope, targets: list[cst.BaseExpression], value: cst.BaseExpression) -> None:
        """Each ``self.x = value`` of a class's method, with what it stores; the names stored on
        other objects (``construction_stores.py``)."""
        for target in targets:
            for attribute in attribute_targets(target):
                if is_self_attribute(attribute) and scope.class_name is not None:
                    stored = stored_value(value, self.qualify, self.known_device) if attribute is target else [OTHER, ""]
                    stores = self.facts.attribute_stores.setdefault(f"{scope.class_name}.{attribute.attr.value}", [])
                    stores.append([scope.qualname, *stored])
                elif attribute.attr.value not in self.facts.foreign_stores and not (
                    attribute is target and moves_itself(attribute, value, self.known_device)
                ):  # on an object of another class, or of no class known here (a helper's ``self``)
                    self.facts.foreign_stores.append(attribute.attr.value)

    def _bind_name(self, scope: WalkScope, name: str, value: cst.BaseExpression) -> None:
        # What the name now holds, forgetting what it held before.
        for known, fact in ((scope.dynamic, self.dynamic_int(value)), (scope.devices, self.known_device(value))):
            if fact is not None:
                known[name] = fact  # type: ignore[index]
            else:
                known.pop(name, None)
        for names, holds in ((scope.masks, self.is_mask(value)), (scope.vectors, self.is_vector(value))):
            if holds:
                names.add(name)
            else:
                names.discard(name)
        if self.is_tensor_value(value):
            scope.values.add(name)
        else:
            scope.values.discard(name)
        for names, holds in ((scope.conditions, self.is_tensor_condition(value)), (scope.displays, is_display(value))):
            if holds:
                names.add(name)
            else:
                names.discard(name)
        if (isinstance(value, cst.Call) and self._moves_with_model(value.func)) or (
            isinstance(value, (cst.Attribute, cst.Call, cst.Subscript)) and self.on_module_device(value)
        ):  # a submodule's output; a parameter or buffer read into a name (w = self.weight), or a
            # view of one (inv = self.inv_freq[None, :, None].float().expand(n, -1, 1))
            scope.module_outputs.add(name)
        else:
            scope.module_outputs.discard(name)
        if isinstance(value, (cst.Call, cst.Subscript, cst.BinaryOperation, cst.UnaryOperation)):
            scope.computed.add(name)
        else:  # an alias of a parameter, an attribute or a constant
            scope.computed.discard(name)
        if isinstance(value, (cst.Name, cst.Attribute)) and self.qualify(value) in apis.CAPTURE_CONTEXTS:
            scope.capture_contexts.add(name)  # kept across branches: ``with name(...)`` may capture
        maker = self.qualify(value.func) if isinstance(value, cst.Call) else None
        if maker:
            scope.made[name] = maker
        else:
            scope.made.pop(name, None)
        if isinstance(value, cst.Call):
            callee = self.qualify(value.func)
            if callee in apis.COMPILER_CONFIG_CLASSES:
                scope.configs[name] = False
                return
            if callee in apis.NPU_BACKEND_FACTORIES:
                config = keyword(value, "compiler_config")
                config_name = config.value.value if config and isinstance(config.value, cst.Name) else None
                scope.backends[name] = config_name

    def _is_shape_tuple(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Attribute) and value.attr.value in apis.SHAPE_ATTRIBUTES:
            return True
        if isinstance(value, cst.Subscript):
            return self._is_shape_tuple(value.value)
        return is_method_call(value, "size") and not value.args  # type: ignore[union-attr]

    def _config_scope(self, name: str) -> WalkScope:
        scope = self.function_scope
        return scope if name in scope.configs else self.module_scope

    def _note_registered_buffer(self, node: cst.Call) -> None:
        """``self.register_buffer("inv_freq", t)`` / ``register_parameter``: ``self.inv_freq``
        moves with the model."""
        func, args = node.func, positional(node)
        class_name = self.function_scope.class_name
        if (
            isinstance(func, cst.Attribute) and func.attr.value in apis.REGISTERING_METHODS and is_self_attribute(func)
            and class_name is not None and args and (name := string_value(args[0].value))
        ):
            self.made_attributes[class_name, name] = apis.REGISTERED_BUFFER


def module_state_names(tree: ast.Module, text: str) -> frozenset[str]:
    """The names a file registers as parameters or buffers of a module it is handed
    (``layer.register_parameter("input_scale", p)`` in vLLM's ``create_weights``): read from
    that module anywhere in the file (``layer.input_scale`` in ``apply_weights``), they are on
    the model's device."""
    if not any(method in text for method in apis.REGISTERING_METHODS):
        return frozenset()
    return frozenset(
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr in apis.REGISTERING_METHODS
        and not (isinstance(node.func.value, ast.Name) and node.func.value.id == "self")
        and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
    )
