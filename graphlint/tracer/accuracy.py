"""Compare a stage's outputs with eager's: dtype-aware tolerances, the largest error named.

Outputs are walked as pytrees (tuples, lists, dicts, transformers ``ModelOutput``); tensors are
compared with ``torch.testing.assert_close``'s default tolerances for their dtype, other leaves
for equality. A bfloat16 or float16 tensor beyond them is judged again against a float64 (else
float32) run of the target, where one can be made (``fp64_reference``), as torch's own accuracy check does
(``torch._dynamo.utils.same``): it differs only when its error against float64 is more than a few
times eager's (root mean square).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from graphlint.tracer.classify.codes import trace_code
from graphlint.tracer.findings import Finding

_MAX_PATH = 400  # bounds the walk into objects' attributes (reference cycles)

_LOW_PRECISION = ("torch.float16", "torch.bfloat16")
# How much further from float64 than eager a low-precision result may be: torch's own multipliers
# (torch._dynamo.utils.same: 3 for bfloat16, 2 otherwise), plus the dtype's atol.
_FP64_MULTIPLIER = {"torch.bfloat16": 3.0, "torch.float16": 2.0}

# rtol, atol by dtype: torch.testing's defaults for the float types it knows.
_TOLERANCES = {
    "torch.float16": (1e-3, 1e-5),
    "torch.bfloat16": (1.6e-2, 1e-5),
    "torch.float32": (1.3e-6, 1e-5),
    "torch.float64": (1e-7, 1e-7),
    "torch.complex64": (1.3e-6, 1e-5),
    "torch.complex128": (1e-7, 1e-7),
}


# (size of the error, description, whether only a float64 reference can tell)
Problem = tuple[float, str, bool]


def compare_outputs(
    stage: str, reference: Any, actual: Any, fp64: Callable[[], Any | None] | None = None
) -> Finding | None:
    """An ``accuracy`` finding when ``actual`` differs from ``reference`` beyond tolerance.
    ``fp64``: makes the float64 run's outputs (or None), asked only when a low-precision tensor
    is beyond its dtype's tolerance."""
    problems: list[Problem] = []
    _compare(_leaves(reference), _leaves(actual), "output", problems)
    if fp64 is not None and any(low for _, _, low in problems):
        reference64 = fp64()
        if reference64 is not None:
            problems = []
            _compare(_leaves(reference), _leaves(actual), "output", problems, _leaves(reference64))
    if not problems:
        return None
    error, where, _ = max(problems, key=lambda p: p[0])
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


def _compare(ref: Any, act: Any, path: str, problems: list[Problem], ref64: Any = None) -> None:
    """``ref64``: the float64 run's counterpart of ``ref``, where the structures agree."""
    import torch

    if isinstance(ref, torch.Tensor) or isinstance(act, torch.Tensor):
        if not (isinstance(ref, torch.Tensor) and isinstance(act, torch.Tensor)):
            problems.append((math.inf, f"{path}: structure: a tensor on one side only", False))
            return
        _compare_tensors(ref, act, path, problems, ref64 if isinstance(ref64, torch.Tensor) else None)
    elif isinstance(ref, dict) and isinstance(act, dict):
        if ref.keys() != act.keys():
            problems.append((math.inf, f"{path}: structure: keys differ", False))
            return
        for key in ref:
            _compare(ref[key], act[key], f"{path}[{key!r}]", problems, ref64.get(key) if isinstance(ref64, dict) else None)
    elif isinstance(ref, tuple) and isinstance(act, tuple):
        if len(ref) != len(act):
            problems.append((math.inf, f"{path}: structure: {len(ref)} outputs vs {len(act)}", False))
            return
        ref64 = ref64 if isinstance(ref64, tuple) and len(ref64) == len(ref) else (None,) * len(ref)
        for i, (r, a, r64) in enumerate(zip(ref, act, ref64)):
            _compare(r, a, f"{path}[{i}]", problems, r64)
    elif _compared_by_identity(ref, act) and len(path) < _MAX_PATH:
        # Objects without an == of their own (transformers' DynamicCache, user state holders):
        # compare what they hold, or two equal caches would differ by identity alone.
        held64 = _leaves(vars(ref64)) if type(ref64) is type(ref) else None
        _compare(_leaves(vars(ref)), _leaves(vars(act)), f"{path}.{type(ref).__name__}", problems, held64)
    elif isinstance(ref, float) and isinstance(act, float):
        if not math.isclose(ref, act, rel_tol=1e-6, abs_tol=1e-6) and not (math.isnan(ref) and math.isnan(act)):
            problems.append((abs(ref - act), f"{path}: {act!r} vs {ref!r}", False))
    elif type(ref) is not type(act) or _unequal(ref, act):
        problems.append((math.inf, f"{path}: structure: {act!r} vs {ref!r}"[:200], False))


def _compared_by_identity(ref: Any, act: Any) -> bool:
    return type(ref) is type(act) and type(ref).__eq__ is object.__eq__ and hasattr(ref, "__dict__")


def _unequal(ref: Any, act: Any) -> bool:
    try:
        return bool(ref != act)
    except Exception:  # objects whose == is not a bool: not comparable, not a mismatch
        return False


def _compare_tensors(ref: Any, act: Any, path: str, problems: list[Problem], ref64: Any = None) -> None:
    import torch

    if ref.shape != act.shape:
        problems.append((math.inf, f"{path}: structure: shape {tuple(act.shape)} vs {tuple(ref.shape)}", False))
        return
    if ref.dtype != act.dtype:
        problems.append((math.inf, f"{path}: structure: dtype {act.dtype} vs {ref.dtype}", False))
        return
    if ref.numel() == 0 or ref.device.type == "meta":
        return
    ref_c, act_c = ref.detach().cpu(), act.detach().cpu()
    if not (ref_c.is_floating_point() or ref_c.is_complex()):
        wrong = ref_c != act_c
        if wrong.any():
            diff = (ref_c.double() - act_c.double()).abs().max().item() if ref_c.dtype != torch.bool else 1.0
            problems.append((diff, f"{path}: {int(wrong.sum())} of {ref_c.numel()} elements differ", False))
        return
    rtol, atol = _TOLERANCES.get(str(ref_c.dtype), (1e-5, 1e-8))
    wide = torch.complex128 if ref_c.is_complex() else torch.float64
    ref_d, act_d = ref_c.to(wide), act_c.to(wide)
    nan_mismatch = ref_d.isnan() != act_d.isnan()
    both = ~(ref_d.isnan() | act_d.isnan())
    diff = (ref_d - act_d).abs()
    bad = (diff > atol + rtol * ref_d.abs()) & both | nan_mismatch
    if not bad.any():
        return
    finite = diff[both & ~diff.isnan()]
    largest = finite.max().item() if finite.numel() else math.nan
    where = f"{path}: {int(bad.sum())} of {ref_d.numel()} elements beyond rtol={rtol}, atol={atol}"
    low = str(ref_c.dtype) in _LOW_PRECISION and not nan_mismatch.any()
    if low and ref64 is not None and ref64.shape == ref.shape and ref64.dtype in (torch.float64, torch.float32):
        exact = ref64.detach().cpu().to(torch.float64)
        ref_error, act_error = _rmse(ref_d, exact), _rmse(act_d, exact)
        allowed = _FP64_MULTIPLIER[str(ref_c.dtype)] * ref_error + atol
        if act_error <= allowed:
            return
        precise = str(ref64.dtype).removeprefix("torch.")
        where += f"; {act_error:.3g} from {precise} where eager is {ref_error:.3g} (root mean square)"
        low = False
    problems.append((largest, where, low))


def _rmse(values: Any, exact: Any) -> float:
    both = ~(values.isnan() | exact.isnan())
    return float(((values - exact)[both] ** 2).mean().sqrt()) if both.any() else 0.0
