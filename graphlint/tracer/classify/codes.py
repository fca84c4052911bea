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
    "stopped": "GT009",  # a rank of a distributed job stopped because a peer died or hung
    # Multi-rank runs (layer `distributed`): the merge of the ranks' reports.
    "graph-divergence": "GD001",  # ranks compile different graphs (breaks, recompiles on some ranks)
    "collective-mismatch": "GD002",  # the ordered collectives of the ranks' graphs differ
    "version-mismatch": "GD003",  # ranks run different torch / torch_npu / CANN / transformers
    "env-mismatch": "GD004",  # ranks run with different HCCL_* / ASCEND_* / MASTER_* … variables
    "rank-hang": "GD005",  # the first rank that stopped progressing, the others waiting on it
    "rank-died": "GD006",  # a rank's process died; the others were stopped
    "rank-missing": "GD007",  # a rank wrote no report
    "oom": "GT010",  # the target ran out of memory (MemoryError, an allocator failure, --memory-limit)
    "target-exit": "GT011",  # the target called sys.exit() (or raised SystemExit) inside a stage
    "load-error": "GT012",  # the target's code raised while it was loaded, or its factory returned the wrong shape
}


def trace_code(kind: str) -> str | None:
    return TRACE_CODES.get(kind)
