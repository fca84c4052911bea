"""A parameter every call of its function hands module state: on the model's device.

``Ernie4_5_VLRotaryEmbedding.forward_cuda`` calls ``triton_ernie45_rope_fused_inplace(...,
cos_sin_cache=self.cos_sin_cache)``, a buffer ``RotaryEmbedding.__init__`` registers; there
``cos_sin_cache.to(device=q.device, dtype=q.dtype)`` moves what the parameter was handed. The
rule treats ``.to(d)`` of a parameter, buffer or submodule output as no copy where the walk sees
it (``SiteContext.on_module_device``: in a capture the model is on one device); across a call it
is no copy either when *every* call of the function hands the parameter such a value
(``CallSite.module_state``, noted by ``module_state_arguments.py``). Sound where the calls are
all in sight, and only there (``ParameterConstants.callers``): nothing is known of a function
something out of sight may call, of one no call reaches, through a call that does not name it
or hands the parameter in ``*xs`` / ``**kw`` or leaves its default; a caller's own parameter
handed on is not followed further up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphlint.checks.edge_conditions import argument_keys
from graphlint.checks.parameter_constants import constants_of
from graphlint.checks.value_graph import FunctionKey

if TYPE_CHECKING:
    from graphlint.checks.link import Project


def receives_module_state(project: Project, function: FunctionKey, parameter: str) -> bool:
    """Whether every call of ``function`` hands ``parameter`` module state (a parameter,
    buffer or submodule output of the model, here or kept by a base class)."""
    callers = constants_of(project).callers(function)
    if callers is None:
        return False
    for file, ordinal, copy in callers:
        site = project.files[file].facts.flow.calls[ordinal]
        keys = argument_keys(project, (file, ordinal), function, parameter, copy)
        if site is None or keys is None:
            return False
        for key in keys:
            state = site.module_state.get(key)
            if state is None or (state != 1 and not project.inherits_module_state(file, *state)):  # type: ignore[misc]
                return False
    return True
