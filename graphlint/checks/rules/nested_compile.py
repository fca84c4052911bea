from __future__ import annotations

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.rules.base import Rule, SiteContext, snippet


class NestedCompile(Rule):
    """## What it does
    Flags a compile entry point (a `@torch.compile`-decorated function, or the target of a
    `torch.compile(...)` call) called by the code an eager graph capture runs
    (`with torch.npu.graph(g):`, `torch.cuda.graph`, `capture_begin()`, `make_graphed_callables`,
    a framework's graph runner or wrapper), with no compiled function on the way: a
    function-level compile inside a model captured as it runs. It is reported at the inner
    entry point: its decorator or its `torch.compile(...)` call. Compile-then-capture is not
    flagged: a compiled function the capture calls itself, or a compiled model (its `forward`:
    `torch.compile(model)`, a `@torch.compile` `forward`) the capture runs: the captured callable
    itself, or a module that the capture code (its block, a graph runner's own methods) calls.
    A compiled module is nested when the capture reaches it from another module's eager
    `forward` (a `torch.nn.Module` subclass of the project): a layer compiled on its own inside
    an eagerly captured model (a norm whose `forward` is `@torch.compile(backend=...)`, called by
    the decoder layer). The call form compiles only what it returns: `g = torch.compile(f)`
    nests where the capture calls `g` (the chain enters `f` at that call), not where it calls
    `f` by its own name, which runs eagerly (where `g` is handed to code outside the project,
    any call of `f` counts).

    Not flagged where dynamo traces the caller (a compiled model, `mode="reduce-overhead"`, a
    torchair backend): dynamo inlines a `@torch.compile` function it reaches and ignores its
    decorator. Measured on torch 2.13 with counting backends
    (`tests/capture/test_nested_compile_inlining.py`): an inner `@torch.compile(dynamic=True)`
    helper called from an outer compiled function never runs its own backend, also with
    `fullgraph=True` or `backend="aot_eager"` outside; the outer compiles it as its own code.
    (Where the inner function itself breaks the graph, its pieces compile with its own options;
    the graph-break rules report the break.)

    ## Why is this bad?
    Under eager capture nothing inlines it: the inner compile runs as its own compiled graph
    inside the captured one. It compiles at its first call, recompiles whenever its guards fail
    (sglang's `@torch.compile(dynamic=True)` `get_masked_input_and_mask` under the NPU graph
    runner recompiled until the recompile limit, pytorch#1497), and its backend's own graph is
    replayed inside the outer capture: on Ascend that replay fails with "Cannot prepare for
    replay during capturing stage" (torchair#310, a function-level
    `@torch.compile` on `token_drop` nested in vLLM's model; the fix was to compile at model
    granularity only) (layer: capture).

    ## Example
    ```python
    @torch.compile(dynamic=True)
    def token_drop(x):
        ...

    class Model(nn.Module):
        def forward(self, x):
            return token_drop(x)

    with torch.npu.graph(graph):
        out = model(x)
    ```

    ## Use instead
    Compile at model granularity, and capture the compiled model (its helpers are traced with
    it), or leave the helper uncompiled:
    ```python
    def token_drop(x):
        ...
    ```

    A compile whose backend runs the traced graph eagerly (`backend="eager"`, `"aot_eager"`, or
    one named in `eager-backends`: vLLM's `current_platform.simple_compile_backend`, which
    vllm-ascend's NPU platform sets to `"eager"`) has no graph of its own, and is not flagged.
    Entry points that skip compiling when they are already inside a compile are never flagged:
    `nesting-safe-entrypoints` in `[tool.graphlint]`, and the presets' (vLLM's
    `support_torch_compile` runs the plain `forward` while dynamo is tracing). Nor is a compile
    that may be off: `torch.compile(..., disable=flag)` with `flag` anything but the literal
    `False` (sglang's helpers pass `disable=_is_npu`: on an NPU they run as they are).

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
    summary = "compile entry point run inside another entry's eager graph capture"
    message = "nested compile: this entry point compiles and runs its own graph inside another entry's graph capture; compile once, at the outer level"
    default_severity = "error"
    regions = frozenset({"capture"})
    traced_only = False  # only an eager capture runs it as its own graph (dynamo inlines it)
    fix_title = "Remove the inner `@torch.compile` decorator"
    fix_safety = "unsafe"
    refs = ("torchair#310", "pytorch#1497")

    def visit_Decorator(self, node: cst.Decorator, ctx: SiteContext) -> None:
        entry = ctx.compile_entry_at(node)
        expr = node.decorator
        if isinstance(expr, cst.Call) and ctx.compiles_eagerly(expr):
            return  # no graph of its own: what it traces runs in the caller's capture as ops
        if entry is not None and not ctx.entry_nests_safely(entry):
            # Only torch's own decorators are removed: a framework's or a configured entry point
            # (vLLM's ``support_torch_compile``) does more than compile, and is never deleted.
            expr = node.decorator
            removable = ctx.qualify(expr.func if isinstance(expr, cst.Call) else expr) in apis.COMPILE_FUNCTIONS
            ctx.report(self, node, fix=removable, own_entry=entry)

    def visit_Call(self, node: cst.Call, ctx: SiteContext) -> None:
        entry = ctx.compile_entry_at(node)
        options = node.func if isinstance(node.func, cst.Call) else node  # torch.compile(backend=...)(f)
        if entry is not None and ctx.compiles_eagerly(options):
            return
        if entry is not None and not ctx.entry_nests_safely(entry):
            ctx.report(self, node, own_entry=entry)

    def apply_fix(self, node: cst.CSTNode) -> cst.CSTNode | cst.RemovalSentinel:
        return cst.RemovalSentinel.REMOVE

    VALID = [
        snippet("""
            import torch
            from torch import nn

            @torch.compile(dynamic=True, backend="eager")
            def get_masked_input_and_mask(ids, start: int, end: int):
                mask = (ids >= start) & (ids < end)
                return ids * mask, ~mask

            class Embedding(nn.Module):
                def forward(self, ids):
                    return get_masked_input_and_mask(ids, 0, 128)[0]

            def capture(g, model: Embedding, ids):
                with torch.npu.graph(g):
                    return Embedding()(ids)
        """),
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
        snippet("""
            import torch
            from torch import nn

            @torch.compile(dynamic=True)
            def token_drop(x):
                return x[:, :4]

            class Model(nn.Module):
                def forward(self, x):
                    return token_drop(x)

            model = torch.compile(Model(), mode="reduce-overhead")
        """),
        snippet("""
            import torch
            from torch import nn

            @torch.compile(dynamic=True)
            def token_drop(x):
                return x[:, :4]

            class Model(nn.Module):
                def forward(self, x):
                    return token_drop(x)

            class Runner:
                def __init__(self):
                    self.model = torch.compile(Model())
                    self.graph = torch.npu.NPUGraph()

                def capture(self, x):
                    with torch.npu.graph(self.graph):
                        return self.model(x)
        """),
        snippet("""
            import torch
            from torch import nn

            class Model(nn.Module):
                @torch.compile(dynamic=True)
                def forward(self, x):
                    return x.relu()

            class Runner:
                def __init__(self):
                    self.model = Model()
                    self.graph = torch.npu.NPUGraph()

                def run_once(self, x):
                    return self.model(x)

                def capture(self, x):
                    with torch.npu.graph(self.graph):
                        return self.run_once(x)
        """),
        snippet("""
            import torch

            @torch.compile
            def step(x):
                return x.sin() * 2

            def capture_step(g, x):
                with torch.cuda.graph(g):
                    y = step(x)
                return y
        """),
    ]
    INVALID = [
        snippet("""
            import torch
            from torch import nn

            class RMSNormTP(nn.Module):
                @torch.compile(dynamic=True)  # error
                def forward(self, x):
                    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True))

            class DecoderLayer(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.norm = RMSNormTP()

                def forward(self, x):
                    return self.norm(x) * 2

            class GraphRunner:
                def __init__(self):
                    self.model = DecoderLayer()
                    self.graph = torch.npu.NPUGraph()

                def capture(self, x):
                    with torch.npu.graph(self.graph):
                        return self.model(x)
        """),
        snippet("""
            import torch
            from torch import nn

            @torch.compile(dynamic=True)  # error
            def get_masked_input_and_mask(ids, start: int, end: int):
                mask = (ids >= start) & (ids < end)
                return ids * mask, ~mask

            class Embedding(nn.Module):
                def forward(self, ids):
                    masked, _ = get_masked_input_and_mask(ids, 0, 128)
                    return masked

            class GraphRunner:
                def __init__(self):
                    self.model = Embedding()
                    self.graph = torch.npu.NPUGraph()

                def capture(self, ids):
                    with torch.npu.graph(self.graph):
                        return self.model(ids)
        """),
        snippet("""
            import torch as t

            def helper(x):
                return x.sin()

            fast_helper = t.compile(helper)  # error

            def decode(x):
                return fast_helper(x) * 2

            def capture_step(g, x):
                with t.cuda.graph(g):
                    y = decode(x)
                return y
        """),
        snippet("""
            import torch
            from torch import compile as jit

            @jit  # error
            def inner(x):
                return x + 1

            def outer(x):
                return inner(x) * 2

            graphed = torch.cuda.make_graphed_callables(outer, (torch.zeros(4),))
        """),
    ]
