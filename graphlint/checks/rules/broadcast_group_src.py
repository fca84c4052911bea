from __future__ import annotations

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.rules.base import Rule, SiteContext, snippet
from graphlint.checks.syntax import keyword


class BroadcastGroupSrc(Rule):
    """## What it does
    Flags `torch.distributed.broadcast(..., group_src=...)` inside a compiled region.

    ## Why is this bad?
    `group_src` arrived in PyTorch 2.6; torchair's `broadcast` converter was written against
    2.1 and rejects it, so graph mode fails to translate the collective (fixed upstream by
    torchair PR#3029; older torch_npu releases still fail) (layer: torchair).

    ## Example
    ```python
    dist.broadcast(t, group_src=0, group=tp_group)
    ```

    ## Use instead
    ```python
    dist.broadcast(t, src=dist.get_global_rank(tp_group, 0), group=tp_group)
    ```

    ## Fix safety
    No automatic fix: `src` is a global rank, `group_src` a rank within the group.

    ## References
    torchair#402
    """

    code = "GL301"
    slug = "broadcast-group-src"
    summary = "dist.broadcast(group_src=...) in a compiled region"
    message = "broadcast(group_src=...) is not supported by torchair's broadcast converter (PyTorch 2.6 argument); pass src="
    default_severity = "error"
    refs = ("torchair#402",)

    def visit_Call(self, node: cst.Call, ctx: SiteContext) -> None:
        if ctx.qualify(node.func) in apis.BROADCAST_FUNCTIONS and keyword(node, "group_src") is not None:
            ctx.report(self, node)

    VALID = [
        snippet("""
            import torch
            import torch.distributed as dist

            @torch.compile
            def sync(t, group):
                dist.broadcast(t, src=0, group=group)
                return t
        """),
        snippet("""
            import torch.distributed as dist

            def sync(t, group):
                dist.broadcast(t, group_src=0, group=group)
        """),
        snippet("""
            import torch

            @torch.compile
            def sync(t, comm):
                comm.broadcast(t, group_src=0)
                return t
        """),
    ]
    INVALID = [
        snippet("""
            import torch
            import torch.distributed as dist

            @torch.compile
            def sync(t, group):
                dist.broadcast(t, group_src=0, group=group)  # error
                return t
        """),
        snippet("""
            import torch
            from torch.distributed import broadcast

            def share(t):
                broadcast(t, group_src=0)  # error

            @torch.compile(backend="npugraph_ex")
            def step(t):
                share(t)
                return t * 2
        """),
        snippet("""
            import torch
            import torch.distributed
            from torch import nn

            class Head(nn.Module):
                def forward(self, x, group):
                    torch.distributed.broadcast(x, group_src=1, group=group)  # error
                    return x

            head = torch.compile(Head())
        """),
    ]
