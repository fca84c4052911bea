"""graphlint's own codes for trace findings that neither a static rule (GLxxx) nor dynamo's
graph-break registry (GBxxxx) names. Stable: CI baselines and sample headers refer to them."""

from __future__ import annotations

TRACE_CODES: dict[str, str] = {
    "model-error": "GT001",  # the target raises when run eagerly
    "compile-error": "GT002",  # compiling or running the compiled target raises
    "recompile": "GT003",  # a recompile below the limit (warning)
    "accuracy": "GT004",  # a stage's outputs differ from eager
    "crash": "GT005",  # the worker died of a signal
    "hang": "GT006",  # the stage ran past --timeout
    "internal-error": "GT007",  # graphlint itself failed in a stage
    "not-implemented": "GT008",  # NotImplementedError: a missing kernel, converter or decomposition
}


def trace_code(kind: str) -> str | None:
    return TRACE_CODES.get(kind)
