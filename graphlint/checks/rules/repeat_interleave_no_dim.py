from __future__ import annotations

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.rules.base import Rule, SiteContext, snippet
from graphlint.checks.syntax import keyword, positional


class RepeatInterleaveNoDim(Rule):
    """## What it does
    Flags `torch.repeat_interleave(x, repeats)` and `x.repeat_interleave(repeats)` called
    without `dim` inside a compiled or captured region, unless `x` is known to be 1-D
    (`torch.arange(...)`, `.flatten()`, `.view(-1)`, or a name assigned one).

    ## Why is this bad?
    Without `dim` the input is flattened and torch_npu runs the flattening kernel
    (`aclnnRepeatInterleave` / `aclnnRepeatInterleaveInt`) instead of the one along a dimension
    (`...WithDim`); in pytorch#1474 that kernel split the work with little parallelism and was
    slower on the NPU than on the CPU. Passing `dim` explicitly (and int32 repeats) was the
    speed-up users verified (layer: operator performance).

    ## Known problems
    Which inputs the slow path covers: the issue's case and fix are about a multi-dimensional
    input that the call flattens; for a 1-D input flattening changes nothing and pytorch#1474
    gives no measurement, so a known 1-D input is not flagged. Eager code is left alone too: the
    rule's cost is per call of hot model code, which is what compiled and captured regions hold
    (a region the static pass reaches; a helper run only in eager setup is not flagged).

    ## Example
    ```python
    kv = torch.repeat_interleave(kv, n_rep)
    ```

    ## Use instead
    ```python
    kv = torch.repeat_interleave(kv, n_rep, dim=1)
    ```

    ## Fix safety
    No automatic fix: without `dim` the result is flattened, so the right `dim` (and maybe a
    `flatten()`) depends on the code.

    ## References
    pytorch#1474
    """

    code = "GL302"
    slug = "repeat-interleave-no-dim"
    summary = "repeat_interleave without dim (slow path on NPU)"
    message = "repeat_interleave without dim= flattens and takes a slow path on NPU; pass dim explicitly"
    default_severity = "warning"
    refs = ("pytorch#1474",)

    def visit_Call(self, node: cst.Call, ctx: SiteContext) -> None:
        func = node.func
        if keyword(node, "dim") is not None:
            return
        args = positional(node)
        if ctx.qualify(func) == f"torch.{apis.REPEAT_INTERLEAVE}":
            if len(args) == 2 or (len(args) == 1 and keyword(node, "repeats") is not None):
                if not ctx.is_vector(args[0].value):
                    ctx.report(self, node)
        elif isinstance(func, cst.Attribute) and func.attr.value == apis.REPEAT_INTERLEAVE:
            name = ctx.qualify(func)
            if len(args) == 1 and not (name or "").startswith("torch.") and not ctx.is_vector(func.value):
                ctx.report(self, node)

    VALID = [
        snippet("""
            import torch

            @torch.compile
            def expand(kv, n_rep):
                return torch.repeat_interleave(kv, n_rep, dim=1)
        """),
        snippet("""
            import torch

            def expand(kv, n_rep):
                return kv.repeat_interleave(n_rep)
        """),
        snippet("""
            import torch

            @torch.compile
            def offsets(counts, seq_lens):
                starts = torch.arange(seq_lens.shape[0], device=seq_lens.device)
                flat = seq_lens.flatten().repeat_interleave(2)
                return torch.repeat_interleave(counts), starts.repeat_interleave(seq_lens), flat
        """),
    ]
    INVALID = [
        snippet("""
            import torch

            @torch.compile
            def expand(kv, n_rep):
                return torch.repeat_interleave(kv, n_rep)  # error
        """),
        snippet("""
            import torch
            from torch import nn

            class Attention(nn.Module):
                def forward(self, kv, n_rep):
                    return kv.repeat_interleave(n_rep)  # error

            model = torch.compile(Attention(), mode="reduce-overhead")
        """),
        snippet("""
            import torch
            from torch import repeat_interleave

            @torch.compile
            def expand(kv, n_rep):
                return repeat_interleave(kv, repeats=n_rep)  # error
        """),
    ]
