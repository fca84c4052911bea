from __future__ import annotations

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.rules.base import Rule, SiteContext, snippet
from graphlint.checks.syntax import keyword, positional


class RepeatInterleaveNoDim(Rule):
    """## What it does
    Flags `torch.repeat_interleave(x, repeats)` and `x.repeat_interleave(repeats)` called
    without `dim`, anywhere (eager code included).

    ## Why is this bad?
    Without `dim` the input is flattened and `aclnnRepeatInterleave` runs with little
    parallelism: on NPU it can be slower than on the CPU. Passing `dim` explicitly (and int32
    repeats) was the verified speed-up (layer: operator performance).

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
    regions = frozenset()
    refs = ("pytorch#1474",)

    def visit_Call(self, node: cst.Call, ctx: SiteContext) -> None:
        func = node.func
        if keyword(node, "dim") is not None:
            return
        args = positional(node)
        if ctx.qualify(func) == f"torch.{apis.REPEAT_INTERLEAVE}":
            if len(args) == 2 or (len(args) == 1 and keyword(node, "repeats") is not None):
                ctx.report(self, node, anywhere=True)
        elif isinstance(func, cst.Attribute) and func.attr.value == apis.REPEAT_INTERLEAVE:
            name = ctx.qualify(func)
            if len(args) == 1 and not (name or "").startswith("torch."):
                ctx.report(self, node, anywhere=True)

    VALID = [
        snippet("""
            import torch

            def expand(kv, n_rep):
                return torch.repeat_interleave(kv, n_rep, dim=1)
        """),
        snippet("""
            import torch

            def expand(kv, n_rep):
                return kv.repeat_interleave(n_rep, 2)
        """),
        snippet("""
            import torch

            def offsets(counts):
                return torch.repeat_interleave(counts)
        """),
    ]
    INVALID = [
        snippet("""
            import torch

            def expand(kv, n_rep):
                return torch.repeat_interleave(kv, n_rep)  # error
        """),
        snippet("""
            import torch

            def expand(kv, n_rep):
                return kv.repeat_interleave(n_rep)  # error
        """),
        snippet("""
            from torch import repeat_interleave

            def expand(kv, n_rep):
                return repeat_interleave(kv, repeats=n_rep)  # error
        """),
    ]
