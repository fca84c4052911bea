"""Call the target the way every executing stage does: fresh copies of the inputs, a fixed
seed, ``torch.no_grad()`` unless training (then backward too)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from graphlint.tracer.stages.base import StageContext, TraceTarget

SEED = 0


def fresh_inputs(target: TraceTarget) -> list[tuple[Any, ...]]:
    """Cloned inputs, so a target that updates its inputs in place cannot change later stages."""
    import torch

    def clone(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return value.detach().clone().requires_grad_(value.requires_grad)
        return value

    return [torch.utils._pytree.tree_map(clone, args) for args in target.inputs]


def call_each(
    fn: Callable[..., Any],
    inputs: Sequence[tuple[Any, ...]],
    kwargs: Sequence[dict[str, Any]],
    train: bool,
    seconds: list[float] | None = None,
) -> list[Any]:
    """``fn`` called once per input with a fixed seed, under ``torch.no_grad()`` unless ``train``
    (then the outputs are back-propagated too); the outputs in order, and the wall time of each
    call appended to ``seconds`` when given. Exceptions propagate."""
    import torch

    outputs = []
    for args, kw in zip(inputs, kwargs):
        torch.manual_seed(SEED)
        start = time.perf_counter()
        if train:
            out = fn(*args, **kw)
            backward_of(out)
        else:
            with torch.no_grad():
                out = fn(*args, **kw)
        if seconds is not None:
            seconds.append(time.perf_counter() - start)
        outputs.append(out)
    return outputs


def call_each_input(
    fn: Callable[..., Any], target: TraceTarget, train: bool, seconds: list[float] | None = None
) -> list[Any]:
    """``call_each`` on fresh copies of the target's inputs."""
    return call_each(fn, fresh_inputs(target), target.kwargs, train, seconds)


def backward_of(output: Any) -> None:
    """Back-propagate the sum of every floating tensor that requires grad in ``output``."""
    import torch

    leaves = [t for t in _tensors(output) if t.requires_grad and t.is_floating_point()]
    if leaves:
        torch.stack([t.float().sum() for t in leaves]).sum().backward()


def _tensors(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    elif hasattr(value, "to_tuple"):  # transformers ModelOutput
        value = list(value.to_tuple())
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    return []


def eager_outputs(ctx: StageContext) -> list[Any] | None:
    """The reference outputs: from the eager stage of this worker, else computed now (after a
    crash the eager stage ran in another process). None when the target fails eagerly."""
    if ctx.eager_outputs is None:
        from graphlint.tracer.first_call import copy_of

        # on a copy: the stage's own target must stay as a first call finds it
        target = ctx.target if ctx.pristine is None else copy_of(ctx.pristine)
        try:
            ctx.eager_outputs = call_each_input(target.fn, target, ctx.options.train)
        except Exception:
            return None
    return ctx.eager_outputs
