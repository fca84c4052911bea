from __future__ import annotations

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.rules.base import Rule, SiteContext, snippet


class NestedCompile(Rule):
    """## What it does
    Flags a compile entry point (a `@torch.compile`-decorated function, or the target of a
    `torch.compile(...)` call) that is called from inside another compiled region. It is
    reported at the inner entry point: its decorator or its `torch.compile(...)` call.

    ## Why is this bad?
    The outer compile already traces everything it calls. The inner compile nests a second
    dynamo frame (and, with reduce-overhead, a second graph capture) inside the first: on Ascend
    the replay then finds the stream outside capture state and fails with
    "Cannot prepare for replay", and `@torch.compile(dynamic=True)` on a helper recompiles until
    it hits the recompile limit (layer: capture).

    ## Example
    ```python
    @torch.compile(dynamic=True)
    def token_drop(x):
        ...

    class Model(nn.Module):
        def forward(self, x):
            return token_drop(x)

    model = torch.compile(Model(), backend=npu_backend)
    ```

    ## Use instead
    Compile at model granularity only; functions it calls are traced with it:
    ```python
    def token_drop(x):
        ...
    ```

    Entry points that skip compiling when they are already inside a compile are not flagged:
    `nesting-safe-entrypoints` in `[tool.graphlint]`, and the presets' (vLLM's
    `support_torch_compile` runs the plain `forward` while dynamo is tracing).

    ## Fix safety
    Removing the inner decorator is an unsafe fix (`--unsafe-fixes`): the function is no longer
    compiled when it is also called from eager code. Only torch's own compile decorators are
    ever removed; a framework's or a configured entry point (`compile-entrypoints`, presets) is
    reported without a fix, since it does more than compile.

    ## References
    torchair#310, pytorch#1497
    """

    code = "GL101"
    slug = "nested-compile"
    summary = "compile entry point reached from another compiled region"
    message = "nested compile: this entry point is called from another compiled region; compile once, at the outer level"
    default_severity = "error"
    fix_title = "Remove the inner `@torch.compile` decorator"
    fix_safety = "unsafe"
    refs = ("torchair#310", "pytorch#1497")

    def visit_Decorator(self, node: cst.Decorator, ctx: SiteContext) -> None:
        entry = ctx.compile_entry_at(node)
        if entry is not None and not ctx.entry_nests_safely(entry):
            # Only torch's own decorators are removed: a framework's or a configured entry point
            # (vLLM's ``support_torch_compile``) does more than compile, and is never deleted.
            expr = node.decorator
            removable = ctx.qualify(expr.func if isinstance(expr, cst.Call) else expr) in apis.COMPILE_FUNCTIONS
            ctx.report(self, node, fix=removable, own_entry=entry)

    def visit_Call(self, node: cst.Call, ctx: SiteContext) -> None:
        entry = ctx.compile_entry_at(node)
        if entry is not None and not ctx.entry_nests_safely(entry):
            ctx.report(self, node, own_entry=entry)

    def apply_fix(self, node: cst.CSTNode) -> cst.CSTNode | cst.RemovalSentinel:
        return cst.RemovalSentinel.REMOVE

    VALID = [
        snippet("""
            import torch

            def helper(x):
                return x * 2

            @torch.compile
            def step(x):
                return helper(x) + 1
        """),
        snippet("""
            import torch

            @torch.compile
            def a(x):
                return x + 1

            @torch.compile
            def b(x):
                return x * 2

            def run(x):
                return a(x) + b(x)
        """),
        snippet("""
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    return x.relu()

            model = Model()
            compiled = torch.compile(model)
            again = torch.compile(model, mode="max-autotune")
        """),
    ]
    INVALID = [
        snippet("""
            import torch
            from torch import nn

            @torch.compile(dynamic=True)  # error
            def token_drop(x):
                return x[:, :4]

            class Model(nn.Module):
                def forward(self, x):
                    return token_drop(x)

            model = torch.compile(Model())
        """),
        snippet("""
            import torch as t

            def helper(x):
                return x.sin()

            fast_helper = t.compile(helper)  # error

            @t.compile(mode="reduce-overhead")
            def step(x):
                return fast_helper(x) * 2
        """),
        snippet("""
            from torch import compile as jit

            @jit  # error
            def inner(x):
                return x + 1

            def outer(x):
                return inner(x) * 2

            compiled_outer = jit(outer)
        """),
    ]

