"""The link's half of ``returned_devices.py``: a move of what a call returns to the device of
the arguments it was made on.

``r = zero_experts_compute_triton(..., hidden_states=h)`` … ``r.to(h.device)``: the walk saw
the move of the call's whole result to the device of the argument ``hidden_states``
(``Candidate.receiver_call``) and that the function returns on the device of its parameter
``hidden_states`` (``FileFacts.device_returns``). The move copies nothing where every function
the call runs is in sight (``Project.called_functions``: a resolved call of project functions
only, each called directly) and hands that parameter one of those arguments
(``edge_conditions.argument_keys``: not a default, ``*xs`` or ``**kw``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphlint.checks.edge_conditions import argument_keys

if TYPE_CHECKING:
    from graphlint.checks.link import Project


def returns_on_arguments(project: Project, file: int, ordinal: int, keys: list[str]) -> bool:
    """Whether every function call ``ordinal`` of ``file`` runs returns only tensors made on the
    device of the parameter the call hands one of the arguments ``keys``."""
    callees = project.called_functions(file, ordinal, None)  # in any copy of the caller
    if not callees:
        return False
    for callee in callees:
        parameter = project.files[callee.file].facts.device_returns.get(callee.qualname)
        handed = argument_keys(project, (file, ordinal), callee, parameter) if parameter else None
        if not handed or not set(handed) <= set(keys):
            return False
    return True
