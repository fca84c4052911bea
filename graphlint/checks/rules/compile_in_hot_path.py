from __future__ import annotations

import libcst as cst

from graphlint.checks.rules.base import Rule, SiteContext, snippet


class CompileInHotPath(Rule):
    """## What it does
    Flags a `torch.compile(...)` (or `module.compile()`) call made inside a loop, inside a
    `forward` method, or inside a compiled region. `x.compile(...)` counts only when it can be
    `nn.Module.compile`: called on a module (an instance, `self.attr`, what a factory returns)
    with nothing but torch.compile's keywords; an FX backend's `compile(graph, inputs)` or a
    DSL's `compile(source)` is some other API.

    ## Why is this bad?
    `torch.compile` returns a new wrapper each time it is called. Called per step or per
    forward, it re-wraps, re-guards and, with reduce-overhead, re-captures every time; in the
    sglang case the helper recompiled until it hit `recompile_limit`, and the replay then ran
    on another stream than the capture (layer: dynamo, then capture).

    ## Example
    ```python
    for batch in loader:
        step = torch.compile(train_step)
        step(batch)
    ```

    ## Use instead
    ```python
    step = torch.compile(train_step)
    for batch in loader:
        step(batch)
    ```

    ## Fix safety
    No automatic fix: where to hoist the call to is a design decision.

    ## References
    pytorch#1497
    """

    code = "GL103"
    slug = "compile-in-hot-path"
    summary = "torch.compile called in a loop, a forward, or a compiled region"
    message = "torch.compile called on a hot path: it re-wraps (and may recompile) on every call; compile once, outside"
    default_severity = "warning"
    refs = ("pytorch#1497",)

    def visit_Call(self, node: cst.Call, ctx: SiteContext) -> None:
        if ctx.compile_entry_at(node) is None:
            return
        hot = ctx.in_loop or ctx.function_name == "forward"
        ctx.report(self, node, anywhere=hot)

    VALID = [
        snippet("""
            import torch

            def train_step(x):
                return x * 2

            step = torch.compile(train_step)
            for i in range(10):
                step(torch.ones(2))
        """),
        snippet("""
            import torch
            from torch import nn

            class Runner:
                def __init__(self, model: nn.Module):
                    self.model = torch.compile(model)

                def run(self, x):
                    return self.model(x)
        """),
        snippet("""
            import torch

            @torch.compile
            def step(x):
                return x + 1

            for _ in range(3):
                step(torch.ones(1))
        """),
        snippet("""
            import torch
            from torch import nn

            class PiecewiseBackend:
                def compile(self, graph, example_inputs, *, runtime_shape=None):
                    return graph

            class Runner(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.backend = PiecewiseBackend()

                def forward(self, pieces, inputs):
                    for piece in pieces:
                        self.backend.compile(piece, inputs, runtime_shape=8)
                    return self.backend.compile(pieces, inputs)
        """),
    ]
    INVALID = [
        snippet("""
            import torch

            def train_step(x):
                return x * 2

            for i in range(10):
                step = torch.compile(train_step)  # error
                step(torch.ones(2))
        """),
        snippet("""
            import torch
            from torch import nn

            class Wrapper(nn.Module):
                def __init__(self, inner):
                    super().__init__()
                    self.inner = inner

                def forward(self, x):
                    fast = torch.compile(self.inner, dynamic=True)  # error
                    return fast(x)
        """),
        snippet("""
            import torch

            def helper(x):
                return x.cos()

            @torch.compile
            def step(x):
                fn = torch.compile(helper)  # error
                return fn(x)
        """),
        snippet("""
            import torch
            from torch import nn

            class Block(nn.Module):
                def forward(self, x):
                    return x.relu()

            class Trainer:
                def __init__(self):
                    self.model = Block()

                def run(self, batches):
                    for batch in batches:
                        self.model.compile(mode="reduce-overhead")  # error
                        self.model(batch)
        """),
    ]
