"""The link's half of ``returned_devices.py``: a move of what a call returns to the device of
the arguments it was made on.

``r = zero_experts_compute_triton(..., hidden_states=h)`` … ``r.to(h.device)``: the walk saw
the move of the call's whole result to the device of the argument ``hidden_states``
(``Candidate.device_calls``) and that the function returns on the device of its parameter
``hidden_states`` (``FileFacts.device_returns``). The move copies nothing where every function
the call runs is in sight (``Project.called_functions``: a resolved call of project functions
only, each called directly, or an instance's ``forward``) and hands that parameter one of those
arguments (``edge_conditions.argument_keys``: not a default, ``*xs`` or ``**kw``). Where the walk
cannot tell (a return made by kernels or a dispatcher: sglang's ``FusedMoE.forward``), the
``device-returns`` knowledge names the parameter.
"""

from __future__ import annotations

from functools import cache
from re import Pattern
from typing import TYPE_CHECKING

from graphlint.checks.edge_conditions import argument_keys
from graphlint.checks.presets import glob_pattern

if TYPE_CHECKING:
    from graphlint.checks.link import Project
    from graphlint.checks.value_graph import FunctionKey


def returns_on_arguments(project: Project, file: int, ordinal: int, keys: list[str]) -> bool:
    """Whether every function call ``ordinal`` of ``file`` runs returns only tensors made on the
    device of the parameter the call hands one of the arguments ``keys``."""
    callees = project.called_functions(file, ordinal, None)  # in any copy of the caller
    if not callees:
        return False
    for callee in callees:
        handed = [
            key
            for parameter in _returned_on(project, callee)
            for key in argument_keys(project, (file, ordinal), callee, parameter) or ()
        ]
        if not handed or not set(handed) <= set(keys):
            return False
    return True


def _returned_on(project: Project, callee: FunctionKey) -> tuple[str, ...]:
    """The parameter ``callee`` returns on the device of: the walk's summary, else the knowledge's."""
    parameter = project.files[callee.file].facts.device_returns.get(callee.qualname)
    if parameter:
        return (parameter,)
    dotted = project.dotted(callee)
    return next((named for pattern, named in _patterns(tuple(project.device_returns.items())) if pattern.match(dotted)), ())


@cache
def _patterns(table: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[tuple[Pattern[str], tuple[str, ...]], ...]:
    return tuple((glob_pattern(glob), named) for glob, named in table)
