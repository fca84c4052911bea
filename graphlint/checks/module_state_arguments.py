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
sites exist (``_finish``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.walk_scope import is_self_attribute


class ModuleStateArguments:
    """A mixin of ``extract.py``'s extractor (it provides the ``SiteValues`` questions)."""

    facts: Any
    module_state_arguments: dict[int, dict[str, list[str] | int]]
    made_by: Callable[[cst.BaseExpression], str | None]
    inherited_attribute: Callable[[cst.BaseExpression], list[str] | None]

    def _note_module_state_arguments(self, ordinal: int, node: cst.Call) -> None:
        """Positions count as ``CallSite.args`` does: the plain arguments before any ``*xs``."""
        found: dict[str, list[str] | int] = {}
        position = 0
        for arg in node.args:
            if arg.star:
                if arg.keyword is None and arg.star == "*":
                    position = -1  # later positions are not known
                continue
            key = arg.keyword.value if arg.keyword is not None else str(position) if position >= 0 else None
            if arg.keyword is None and position >= 0:
                position += 1
            if key is None:
                continue
            if not is_self_attribute(arg.value):
                continue
            if self.made_by(arg.value) in apis.MODULE_TENSOR_MAKERS:
                found[key] = 1
            elif (inherited := self.inherited_attribute(arg.value)) is not None:
                found[key] = inherited
        if found:
            self.module_state_arguments[ordinal] = found

    def _finish_module_state_arguments(self) -> None:
        calls = self.facts.flow.calls
        for ordinal, found in self.module_state_arguments.items():
            site = calls[ordinal] if ordinal < len(calls) else None
            if site is not None:
                site.module_state = found
