"""The float64 reference that judges low-precision outputs.

In bfloat16 or float16 a compiled graph and eager round differently (fused ops, decompositions that
upcast, other reduction orders), so "differs from eager beyond the dtype's tolerance" alone flags
healthy graphs. torch's own accuracy checks (``torch._dynamo.utils.same`` with ``fp64_ref``, as the
minifier and the benchmark harness use it) ask instead whether the compiled result is much further
from a float64 run than eager is. This module makes that float64 run: the target as it was before
any call, cast to float64, called with the same inputs cast likewise. Where float64 cannot run (a
kernel without it, such as ``torch._grouped_mm`` of MoE experts), float32 stands in: still far more
precise than the bfloat16 or float16 under judgement.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from graphlint.tracer.calls import call_each_input
from graphlint.tracer.stages.base import StageContext, TraceTarget

_NOT_COMPUTED = object()


def fp64_outputs(ctx: StageContext) -> list[Any] | None:
    """The outputs of the float64 (else float32) run, one per input (computed once per worker),
    or None when there is none: the target is not a module (its weights cannot be cast) or
    neither run works."""
    cached = ctx.shared.get("fp64_outputs", _NOT_COMPUTED)
    if cached is _NOT_COMPUTED:
        cached = ctx.shared["fp64_outputs"] = _run_in_fp64(ctx)
    return cached


def _run_in_fp64(ctx: StageContext) -> list[Any] | None:
    import torch

    if ctx.pristine is None:
        return None
    for dtype in (torch.float64, torch.float32):
        try:
            return _run_in(ctx.pristine, ctx.options.train, dtype)
        except Exception:  # noqa: BLE001 - a kernel without this dtype: the next, else none
            continue
    return None


def _run_in(pristine: TraceTarget, train: bool, dtype: Any) -> list[Any]:
    """A copy of the target as built, its weights and floating inputs in ``dtype``, called eagerly."""
    import torch

    from graphlint.tracer.first_call import copy_of

    def cast(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            return value.detach().to(dtype).requires_grad_(value.requires_grad)
        return value

    target = copy_of(pristine)
    getattr(target.fn, "__self__", target.fn).to(dtype)
    target = dataclasses.replace(
        target,
        inputs=[torch.utils._pytree.tree_map(cast, args) for args in target.inputs],
        kwargs=[torch.utils._pytree.tree_map(cast, kwargs) for kwargs in target.kwargs],
    )
    return call_each_input(target.fn, target, train)
