"""Compare a stage's outputs with eager's: dtype-aware tolerances, the largest error named.

Outputs are walked as pytrees (tuples, lists, dicts, transformers ``ModelOutput``); tensors are
compared with ``torch.testing.assert_close``'s default tolerances for their dtype, other leaves
for equality.
"""

from __future__ import annotations

import math
from typing import Any

from graphlint.tracer.classify.codes import trace_code
from graphlint.tracer.findings import Finding

_MAX_PATH = 400  # bounds the walk into objects' attributes (reference cycles)

# rtol, atol by dtype: torch.testing's defaults for the float types it knows.
_TOLERANCES = {
    "torch.float16": (1e-3, 1e-5),
    "torch.bfloat16": (1.6e-2, 1e-5),
    "torch.float32": (1.3e-6, 1e-5),
    "torch.float64": (1e-7, 1e-7),
    "torch.complex64": (1.3e-6, 1e-5),
    "torch.complex128": (1e-7, 1e-7),
}


def compare_outputs(stage: str, reference: Any, actual: Any) -> Finding | None:
    """An ``accuracy`` finding when ``actual`` differs from ``reference`` beyond tolerance."""
    problems: list[tuple[float, str]] = []  # (size of the error, description)
    _compare(_leaves(reference), _leaves(actual), "output", problems)
    if not problems:
        return None
    error, where = max(problems, key=lambda p: p[0])
    size = f"{error:.3g}" if math.isfinite(error) else "its structure"
    message = f"{stage} output differs from eager by {size} ({where})"
    return Finding(
        layer="accuracy",
        stage=stage,
        kind="accuracy",
        code=trace_code("accuracy"),
        message=message,
        details={"max_abs_error": None if math.isinf(error) else error, "where": where, "mismatches": len(problems)},
    )


def _leaves(value: Any) -> Any:
    if hasattr(value, "to_tuple") and callable(value.to_tuple):  # transformers ModelOutput
        return tuple(_leaves(v) for v in value.to_tuple())
    if isinstance(value, dict):
        return {k: _leaves(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(_leaves(v) for v in value)
    return value


def _compare(ref: Any, act: Any, path: str, problems: list[tuple[float, str]]) -> None:
    import torch

    if isinstance(ref, torch.Tensor) or isinstance(act, torch.Tensor):
        if not (isinstance(ref, torch.Tensor) and isinstance(act, torch.Tensor)):
            problems.append((math.inf, f"{path}: structure: a tensor on one side only"))
            return
        _compare_tensors(ref, act, path, problems)
    elif isinstance(ref, dict) and isinstance(act, dict):
        if ref.keys() != act.keys():
            problems.append((math.inf, f"{path}: structure: keys differ"))
            return
        for key in ref:
            _compare(ref[key], act[key], f"{path}[{key!r}]", problems)
    elif isinstance(ref, tuple) and isinstance(act, tuple):
        if len(ref) != len(act):
            problems.append((math.inf, f"{path}: structure: {len(ref)} outputs vs {len(act)}"))
            return
        for i, (r, a) in enumerate(zip(ref, act)):
            _compare(r, a, f"{path}[{i}]", problems)
    elif _compared_by_identity(ref, act) and len(path) < _MAX_PATH:
        # Objects without an == of their own (transformers' DynamicCache, user state holders):
        # compare what they hold, or two equal caches would differ by identity alone.
        _compare(_leaves(vars(ref)), _leaves(vars(act)), f"{path}.{type(ref).__name__}", problems)
    elif isinstance(ref, float) and isinstance(act, float):
        if not math.isclose(ref, act, rel_tol=1e-6, abs_tol=1e-6) and not (math.isnan(ref) and math.isnan(act)):
            problems.append((abs(ref - act), f"{path}: {act!r} vs {ref!r}"))
    elif type(ref) is not type(act) or _unequal(ref, act):
        problems.append((math.inf, f"{path}: structure: {act!r} vs {ref!r}"[:200]))


def _compared_by_identity(ref: Any, act: Any) -> bool:
    return type(ref) is type(act) and type(ref).__eq__ is object.__eq__ and hasattr(ref, "__dict__")


def _unequal(ref: Any, act: Any) -> bool:
    try:
        return bool(ref != act)
    except Exception:  # objects whose == is not a bool: not comparable, not a mismatch
        return False


def _compare_tensors(ref: Any, act: Any, path: str, problems: list[tuple[float, str]]) -> None:
    import torch

    if ref.shape != act.shape:
        problems.append((math.inf, f"{path}: structure: shape {tuple(act.shape)} vs {tuple(ref.shape)}"))
        return
    if ref.dtype != act.dtype:
        problems.append((math.inf, f"{path}: structure: dtype {act.dtype} vs {ref.dtype}"))
        return
    if ref.numel() == 0 or ref.device.type == "meta":
        return
    ref_c, act_c = ref.detach().cpu(), act.detach().cpu()
    if not (ref_c.is_floating_point() or ref_c.is_complex()):
        wrong = ref_c != act_c
        if wrong.any():
            diff = (ref_c.double() - act_c.double()).abs().max().item() if ref_c.dtype != torch.bool else 1.0
            problems.append((diff, f"{path}: {int(wrong.sum())} of {ref_c.numel()} elements differ"))
        return
    rtol, atol = _TOLERANCES.get(str(ref_c.dtype), (1e-5, 1e-8))
    wide = torch.complex128 if ref_c.is_complex() else torch.float64
    ref_d, act_d = ref_c.to(wide), act_c.to(wide)
    nan_mismatch = ref_d.isnan() != act_d.isnan()
    both = ~(ref_d.isnan() | act_d.isnan())
    diff = (ref_d - act_d).abs()
    bad = (diff > atol + rtol * ref_d.abs()) & both | nan_mismatch
    if bad.any():
        finite = diff[both & ~diff.isnan()]
        largest = finite.max().item() if finite.numel() else math.nan
        problems.append((largest, f"{path}: {int(bad.sum())} of {ref_d.numel()} elements beyond rtol={rtol}, atol={atol}"))
