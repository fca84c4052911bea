from __future__ import annotations

import libcst as cst

from graphlint.checks import dynamo
from graphlint.checks.rules._break import BreakRule
from graphlint.checks.rules.base import SiteContext, snippet
from graphlint.checks.syntax import positional


class CheckReadsTensor(BreakRule):
    """## What it does
    Flags check helpers that read a tensor condition back to Python, inside a compiled region:
    `torch._check_tensor_all(cond)` and `torch._check_tensor_all_with(...)` always, and
    `torch._check(cond)`, `torch._check_with(...)` and transformers'
    `torch_compilable_check(cond, msg)` when `cond` is a tensor: a comparison of a reduced
    tensor (`n_tokens == features.numel()` with `n_tokens = mask.sum()`), a reduction
    (`mask.all()`), indexing into a tensor parameter.

    ## Why is this bad?
    The helpers exist to give dynamo a hint instead of an `if ...: raise`, and for Python
    conditions they do. For a tensor condition they call `.item()` on it: in torch.compile's
    default mode that is a graph break (GB0124) on every call, in a capture a device sync
    (layer: dynamo). transformers' `torch_compilable_check` calls `torch._check_tensor_all`
    while tracing, so it breaks the graph there. With `fullgraph=True` torch 2.13 keeps the
    check in the graph, so it is a warning there.

    ## Example
    ```python
    n_image_tokens = special_image_mask.sum()
    torch_compilable_check(n_image_tokens == image_features.shape[0], "tokens do not match")
    ```

    ## Use instead
    Check shapes and Python values (`torch._check(x.shape[0] == n)`), or move tensor checks
    out of the compiled code (validate inputs before calling the model).

    ## Fix safety
    No automatic fix.

    ## References
    torchair#212 (dynamo "Unsupported" on transformers code: keep it out of the compiled
    forward, check with `aot_eager` first); torch 2.13 graph-break registry GB0124; the Hugging Face graph-break corpus
    (penguinwu/oss-model-graph-break-corpus)
    """

    code = "GL108"
    slug = "check-reads-tensor"
    summary = "torch._check_tensor_all / torch_compilable_check on a tensor condition in a compiled region"
    message = "check helper reads a tensor condition back: dynamo breaks the graph here"
    refs = ("torchair#212",)
    predicts = ("GB0124",)
    breaks_fullgraph = False

    def visit_Call(self, node: cst.Call, ctx: SiteContext) -> None:
        name = ctx.qualify(node.func)
        entry = dynamo.value_check(name)
        if entry is None:
            return
        args = positional(node)
        index = entry["tensor_arg"]
        if entry["always"] or (len(args) > index and self._tensor_condition(args[index].value, ctx)):
            short = (name or "check").rsplit(".", 1)[-1]
            ctx.report(self, node, f"{short}() on a tensor condition: it calls .item() (a graph break)", predicts=tuple(entry["gb"]))

    def _tensor_condition(self, cond: cst.BaseExpression, ctx: SiteContext) -> bool:
        if isinstance(cond, cst.Comparison):
            return ctx.is_tensor_value(cond.left) or any(ctx.is_tensor_value(c.comparator) for c in cond.comparisons)
        if isinstance(cond, cst.BooleanOperation):
            return self._tensor_condition(cond.left, ctx) or self._tensor_condition(cond.right, ctx)
        if isinstance(cond, cst.UnaryOperation):
            return self._tensor_condition(cond.expression, ctx)
        if isinstance(cond, cst.Call) and ctx.qualify(cond.func) == "bool" and cond.args:
            return ctx.is_tensor_value(cond.args[0].value)
        return ctx.is_tensor_value(cond)

    VALID = [
        snippet("""
            import torch

            @torch.compile
            def step(x, n: int):
                torch._check(x.shape[0] == n)
                torch._check(n > 0, lambda: "n must be positive")
                return x[:n]
        """),
        snippet("""
            import torch

            def validate(mask):
                torch._check_tensor_all(mask.any(dim=-1))

            @torch.compile
            def step(x):
                return x * 2
        """),
        snippet("""
            import torch
            from transformers.utils import torch_compilable_check

            @torch.compile
            def step(ids, features):
                torch_compilable_check(ids.shape[-1] == features.shape[0], "lengths differ")
                return features
        """),
    ]
    INVALID = [
        snippet("""
            import torch

            @torch.compile
            def step(x):
                torch._check_tensor_all(x > 0, lambda: "negative")  # error
                return x.log()
        """),
        snippet("""
            import torch
            from torch import nn
            from ...utils import torch_compilable_check

            class Merger(nn.Module):
                def forward(self, ids, features):
                    n_tokens = (ids == 7).sum()
                    torch_compilable_check(  # error
                        n_tokens * features.shape[-1] == features.numel(),
                        "image tokens and features do not match",
                    )
                    return features

            model = torch.compile(Merger())
        """),
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x: torch.Tensor, position_ids: torch.LongTensor | None = None):
                torch._check(bool((x > 0).all()))  # error
                torch._check(position_ids[0][0] == 0)  # error
                return x
        """),
    ]
