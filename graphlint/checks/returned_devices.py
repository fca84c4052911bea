"""Functions whose every return is made on a parameter's device, and moves of what they return.

sglang's ``zero_experts_compute_triton(..., hidden_states)`` returns ``output``, bound once to
``torch.zeros_like(hidden_states).to(hidden_states.device)``: on the device of the tensor the
caller hands ``hidden_states``. So ``r = zero_experts_compute_triton(hidden_states=h)`` …
``r.to(h.device)`` copies nothing. The walk notes (a mixin of ``extract.py``'s extractor):

- per function, the parameter every ``return`` is made on the device of
  (``FileFacts.device_returns``; "" where one return is not, or returns disagree): the parameter
  itself, a ``*_like`` factory of it, ``p.new_*(...)``, a factory with ``device=p.device``,
  ``.to(p.device)``, a device-preserving method of one of these (``.view``, ``.to(dtype)``), or a
  name bound once to one. Only a parameter the function never rebinds, in a function with no
  decorator but ``staticmethod`` / ``classmethod`` (a wrapper may return something else). A
  bare ``return`` or ``return None`` is no tensor: ``.to`` of it raises, copying nothing;
- per ``t.to(d)`` of a call's whole result (the call itself, or a name whose only binding is
  that call: ``returned_none.py``), the arguments of the call on ``d``, by their key as
  ``CallSite`` counts them (``Candidate.device_calls``; ``module_state_arguments.py`` notes
  each argument's device);
- per ``t.to(y.device)`` where ``y`` is a call's whole result (LongCat-Flash's ``final =
  self.experts(hidden_states, topk)``, then ``final *= s`` in place, then ``r.to(final.device)``
  of ``r = zero_experts(..., hidden_states=hidden_states)``): ``y`` is on the device of the
  arguments the call hands on, so the move copies nothing where ``t`` is known on the device of
  one of them or is a call's result made on it. The name the shared device is read off must hold
  tensors on one device in the function (``CaptureLocals.one_device``: ``hidden_states =
  hidden_states.view(-1, d)`` keeps it).

The link (``device_returns.py``) voids the move where, for one way, every function each call
runs, all of them in sight, returns on the device of a parameter the call hands one of those
arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.facts import WHOLE_RETURN
from graphlint.checks.module_state_arguments import keyed_arguments
from graphlint.checks.syntax import keyword

# Decorators that hand the call to the function as it is.
_TRANSPARENT_DECORATORS = frozenset({"staticmethod", "classmethod"})
_DEVICE = ".device"


class ReturnedDevices:
    """The walk's half (it provides the scopes, ``known_device`` and ``_returned``)."""

    facts: Any
    function_scope: Any
    argument_devices: dict[int, dict[str, str]]  # module_state_arguments.py
    argument_device: Callable[[cst.BaseExpression], str | None]  # … the device of one argument
    qualify: Callable[[cst.BaseExpression], str | None]
    known_device: Callable[[cst.BaseExpression], str | None]
    _returned: Callable[[str], tuple[int, int] | None]  # returned_none.py

    def _note_return_device(self, node: cst.Return) -> None:
        scope = self.function_scope
        value = node.value
        if scope.kind != "function" or value is None or (isinstance(value, cst.Name) and value.value == "None"):
            return
        returns = self.facts.device_returns
        parameter = self._returned_parameter(value)
        if parameter is None or returns.get(scope.qualname, parameter) != parameter:
            returns[scope.qualname] = ""
        else:
            returns[scope.qualname] = parameter

    def _returned_parameter(self, value: cst.BaseExpression) -> str | None:
        """The parameter ``value``, returned, is made on the device of, where known."""
        scope = self.function_scope
        definition, bindings = scope.definition, scope.capture_locals
        if definition is None or bindings is None:
            return None
        if any(self.qualify(d.decorator) not in _TRANSPARENT_DECORATORS for d in definition.decorators):
            return None
        if isinstance(value, cst.Name) and not _is_parameter(definition, value.value):
            if not bindings.bound_once(value.value, True):
                return None  # the walk keeps the last binding's device: only one is sure
        device = self._parameter_device(value, definition)
        if device is None or not device.endswith(_DEVICE):
            return None
        parameter = device[: -len(_DEVICE)]
        unbound = _is_parameter(definition, parameter) and bindings.bound_once(parameter, False)
        return parameter if unbound else None

    def _parameter_device(self, expr: cst.BaseExpression, definition: cst.FunctionDef) -> str | None:
        """``known_device``, where a parameter read as it is is on its own device and
        ``p.new_*(...)`` on ``p``'s."""
        if isinstance(expr, cst.Name) and _is_parameter(definition, expr.value):
            return expr.value + _DEVICE
        func = expr.func if isinstance(expr, cst.Call) else None
        if isinstance(func, cst.Attribute) and keyword(expr, "device") is None:  # type: ignore[arg-type]
            method = func.attr.value
            moves = method == "to" and self.known_device(expr) != self.known_device(func.value)
            if method.startswith("new_") or method in apis.DEVICE_PRESERVING_METHODS or (method == "to" and not moves):
                return self._parameter_device(func.value, definition)
        return self.known_device(expr)

    def device_calls(self, expr: cst.BaseExpression, device: str) -> list[list[list[Any]]] | None:
        """Ways to show that ``expr`` is on ``device``, each a list of [call, argument keys] (see
        the module's docstring): ``expr`` a call's whole result made there, or ``device`` read
        off one (``y.device``) and ``expr`` on the device of the same arguments."""
        ways: list[list[list[Any]]] = []
        made = self._returned_call(expr, device)
        if made is not None:
            ways.append([made])
        target = self._result_devices(expr, device)
        ordinal, devices = target if target is not None else (0, {})
        for shared in sorted(set(devices.values())):
            keys = sorted(key for key, text in devices.items() if text == shared)
            if self._one_device(expr, shared) and self.known_device(expr) == shared:
                ways.append([[ordinal, keys]])
            elif (made := self._returned_call(expr, shared)) is not None:
                ways.append([made, [ordinal, keys]])
        return ways or None

    def _result_devices(self, move: cst.BaseExpression, device: str) -> tuple[int, dict[str, str]] | None:
        """(the call's ordinal, its arguments' devices by key) where ``device`` is ``y.device``
        and ``y`` holds the whole result of that call at ``move``: the binding before it, the
        others keeping its device (``y *= s``)."""
        name = device.removesuffix(_DEVICE)
        returned = self.function_scope.returned.get(name) if device.endswith(_DEVICE) else None
        if returned is None or returned[1] != WHOLE_RETURN or not returned[2] or not self._one_device(move, device):
            return None
        devices = self.argument_devices.get(returned[0])
        return (returned[0], devices) if devices else None

    def _one_device(self, move: cst.BaseExpression, device: str) -> bool:
        """Whether the name ``device`` reads (``h`` of ``h.device``) holds tensors on one device
        up to ``move`` (wherever it is read, in a loop): what the walk knows of names is their
        last binding's, not the one at the move."""
        root = device.split(".", 1)[0]
        bindings = self.function_scope.capture_locals
        before = move if self.function_scope.loops == 0 else None  # a loop may take a later binding back
        return bindings is not None and root.isidentifier() and bindings.one_device(root, before)

    def _returned_call(self, expr: cst.BaseExpression, device: str) -> list[Any] | None:
        """[the call (its node: walked after the move that reads it) or its ordinal, keys of its
        arguments on ``device``] where ``expr`` is a call's whole result (the call, or a name
        whose only binding is one) and some argument is there."""
        if not self._one_device(expr, device):
            return None  # the device's name may hold another tensor at the move than at the call
        if isinstance(expr, cst.Call):
            keys = [key for key, value in keyed_arguments(expr) if self.argument_device(value) == device]
            return [expr, sorted(keys)] if keys else None
        returned = self._returned(expr.value) if isinstance(expr, cst.Name) else None
        if returned is None or returned[1] != WHOLE_RETURN:
            return None
        ordinal = returned[0]
        keys = [key for key, text in self.argument_devices.get(ordinal, {}).items() if text == device]
        return [ordinal, sorted(keys)] if keys else None


def _is_parameter(definition: cst.FunctionDef, name: str) -> bool:
    params = definition.params
    return any(p.name.value == name for p in (*params.posonly_params, *params.params, *params.kwonly_params))
