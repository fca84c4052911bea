"""The arguments of each call that are module state, noted by the walk for the link.

``triton_ernie45_rope_fused_inplace(q=query, cos_sin_cache=self.cos_sin_cache, ...)`` hands a
registered buffer; in the function, ``cos_sin_cache.to(device=q.device)`` moves the parameter.
The walk knows what an argument is at the call: ``self.x`` the class registered as a buffer or
made an ``nn.Parameter``, or one it does not make, which a base class in another file may keep
(``inherited_attribute``; the link asks ``Project.inherits_module_state``); the link knows every
call of the function (``module_state_parameters.py``). Narrower than what the rule takes as on
the model's device where it sees the receiver itself (``on_module_device``): not an attribute of
an attribute (``self.dispatcher.mapping`` may be a plain tensor of a plain object), nor a name
or a call's result. Written into ``CallSite.module_state`` once the assignment graph's call
sites exist (``_finish``). Beside it, the device of each argument (``known_device``, else the
device of the name or attribute handed: ``h`` → ``h.device``), kept for the walk: a move of
what the call returns to one of them (``returned_devices.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.site_values import SOURCE_TEXT
from graphlint.checks.walk_scope import is_self_attribute


class ModuleStateArguments:
    """A mixin of ``extract.py``'s extractor (it provides the ``SiteValues`` questions)."""

    facts: Any
    module_state_arguments: dict[int, dict[str, list[str] | int]]
    argument_devices: dict[int, dict[str, str]]  # call ordinal → argument key → its device
    made_by: Callable[[cst.BaseExpression], str | None]
    inherited_attribute: Callable[[cst.BaseExpression], list[str] | None]
    known_device: Callable[[cst.BaseExpression], str | None]

    def _note_arguments(self, ordinal: int, node: cst.Call) -> None:
        found: dict[str, list[str] | int] = {}
        devices: dict[str, str] = {}
        for key, value in keyed_arguments(node):
            device = self.argument_device(value)
            if device is not None:
                devices[key] = device
            if not is_self_attribute(value):
                continue
            if self.made_by(value) in apis.MODULE_TENSOR_MAKERS:
                found[key] = 1
            elif (inherited := self.inherited_attribute(value)) is not None:
                found[key] = inherited
        if found:
            self.module_state_arguments[ordinal] = found
        if devices:
            self.argument_devices[ordinal] = devices

    def argument_device(self, value: cst.BaseExpression) -> str | None:
        """Where an argument is: ``known_device``, else the device of the name or attribute
        handed (``h`` → ``h.device``)."""
        device = self.known_device(value)
        if device is None and isinstance(value, (cst.Name, cst.Attribute)):
            device = f"{SOURCE_TEXT.code_for_node(value)}.device"
        return device

    def _finish_module_state_arguments(self) -> None:
        calls = self.facts.flow.calls
        for ordinal, found in self.module_state_arguments.items():
            site = calls[ordinal] if ordinal < len(calls) else None
            if site is not None:
                site.module_state = found


def keyed_arguments(node: cst.Call) -> Iterator[tuple[str, cst.BaseExpression]]:
    """Each argument by its key, counted as ``CallSite.args`` does: a position (as a string) of
    the plain arguments before any ``*xs``, or a keyword; ``**kw`` and what follows ``*xs`` have
    none."""
    position = 0
    for arg in node.args:
        if arg.star:
            if arg.keyword is None and arg.star == "*":
                position = -1  # later positions are not known
            continue
        if arg.keyword is not None:
            yield arg.keyword.value, arg.value
        elif position >= 0:
            yield str(position), arg.value
            position += 1
