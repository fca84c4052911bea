"""What each ``self.attr = value`` of a class stores, as far as the device it lands on goes.

A framework's loader may build the model under ``with torch.device(target)`` (sglang's and
vLLM's ``load_model``): a factory without ``device=`` in code that runs only then makes its
tensor on the target, and a plain tensor attribute kept from then is where the weights are. The
walk records every store of a ``self`` attribute with the function it is made in and what it
stores (``FileFacts.attribute_stores``), and the names stored on other objects
(``layer.x = ...``: ``FileFacts.foreign_stores``); the linked project decides
(``device_construction.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.device_construction import FACTORY, NONE, OTHER, STATE
from graphlint.checks.syntax import keyword
from graphlint.checks.walk_scope import is_self_attribute



def stored_value(
    value: cst.BaseExpression,
    qualify: Callable[[cst.BaseExpression], str | None],
    known_device: Callable[[cst.BaseExpression], str | None],
) -> list[str]:
    """``[kind, attribute]`` of what ``self.x = value`` stores (``attribute``: the ``self``
    attribute of a "state" store, else "")."""
    if isinstance(value, cst.Name) and value.value == "None":
        return [NONE, ""]
    if (
        isinstance(value, cst.Call) and qualify(value.func) in apis.TENSOR_FACTORIES
        and known_device(value) is None and keyword(value, "device") is None
        and not any(arg.star == "**" for arg in value.args)  # **kwargs may hand it a device
    ):
        return [FACTORY, ""]
    source = kept_source(value, known_device)
    if is_self_attribute(source):
        return [STATE, source.attr.value]  # type: ignore[attr-defined]
    return [OTHER, ""]


def kept_source(
    value: cst.BaseExpression, known_device: Callable[[cst.BaseExpression], str | None]
) -> cst.BaseExpression:
    """The tensor ``value`` keeps where it is: ``t`` of ``t.to(d)`` (``d`` not the host),
    ``t.to(dtype)``, ``t.float()``, ``t.view(...)``, as for the buffers whose ``.to(x.device)``
    the rules take to copy nothing (one device under capture); else ``value`` itself."""
    source = value
    while isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute):
        method = source.func.attr.value
        if method not in apis.DEVICE_PRESERVING_METHODS and not (method == "to" and known_device(source) != apis.HOST_DEVICE):
            break
        source = source.func.value
    return source


def moves_itself(
    attribute: cst.Attribute, value: cst.BaseExpression, known_device: Callable[[cst.BaseExpression], str | None]
) -> bool:
    """``x.a = x.a.to(d)``: the store keeps the attribute's tensor on its device."""
    return value is not attribute and kept_source(value, known_device).deep_equals(attribute)


def attribute_targets(target: cst.BaseExpression) -> list[cst.Attribute]:
    """The attributes an assignment target writes (``a.x``; each of ``a.x, b = ...``)."""
    if isinstance(target, cst.Attribute):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [attr for element in target.elements for attr in attribute_targets(element.value)]
    if isinstance(target, cst.StarredElement):
        return attribute_targets(target.value)
    return []
