from __future__ import annotations

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.rules.base import Rule, SiteContext, snippet
from graphlint.checks.syntax import preorder


class DataDependentBranch(Rule):
    """## What it does
    Flags Python control flow that reads a tensor's *value* inside a compiled region:
    `if t.any():`, `while t.item() > 0:`, `if torch.equal(a, b):`, `x if t.sum() else y`,
    `assert t.all()`, and `bool(t)`. It is reported at the call that reads the value. An `if`
    on a comparison with a tensor (`if torch.rand([]) < p:`, with the tensor bound to a name
    first too) or on a name bound to one (layer-drop's `skip = self.training and
    torch.rand([]) < p` then `if not skip:`) is reported at the `if`.

    ## Why is this bad?
    Dynamo cannot know which branch a tensor value selects at trace time: it breaks the graph
    there (or specialises and guards on the value), so one compiled function becomes several
    graphs with host round trips in between, and capture is impossible (layer: dynamo).

    ## Example
    ```python
    if (mask > 0).any():
        x = x * mask
    ```

    ## Use instead
    Keep the decision in the graph: `x = torch.where(mask > 0, x * mask, x)`, or
    `torch.cond(...)` for real branches.

    ## Fix safety
    No automatic fix.

    ## References
    dynamo graph breaks (torchair#212 triage: aot_eager first, then the NPU backend)
    """

    code = "GL105"
    slug = "data-dependent-branch"
    summary = "Python control flow on tensor values inside a compiled region"
    message = "control flow on a tensor value: dynamo breaks the graph here (or guards on the value)"
    default_severity = "warning"
    refs = ("torchair#212",)
    predicts = ("GB0170", "GB0035", "GB0124")

    def visit_If(self, node: cst.If, ctx: SiteContext) -> None:
        if not self._check_test(node.test, ctx) and ctx.is_tensor_condition(node.test):
            ctx.report(self, node)

    def visit_While(self, node: cst.While, ctx: SiteContext) -> None:
        self._check_test(node.test, ctx)

    def visit_IfExp(self, node: cst.IfExp, ctx: SiteContext) -> None:
        self._check_test(node.test, ctx)

    def visit_Assert(self, node: cst.Assert, ctx: SiteContext) -> None:
        self._check_test(node.test, ctx)

    def visit_Call(self, node: cst.Call, ctx: SiteContext) -> None:
        if ctx.qualify(node.func) == "bool" and node.args and not isinstance(node.args[0].value, cst.Name):
            self._check_test(node.args[0].value, ctx, at=node)

    def _check_test(self, test: cst.BaseExpression, ctx: SiteContext, at: cst.Call | None = None) -> bool:
        """Reports the first call in ``test`` that reads a tensor's value; whether there was one."""
        for node in preorder(test):
            if isinstance(node, (cst.Lambda, cst.ListComp, cst.GeneratorExp)):
                return False
            if isinstance(node, cst.Call) and self._reads_value(node, ctx):
                ctx.report(self, at or node)
                return True
        return False

    def _reads_value(self, call: cst.Call, ctx: SiteContext) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in apis.VALUE_METHODS:
            return not _is_builtin_receiver(func.value)
        return ctx.qualify(func) in apis.VALUE_FUNCTIONS

    VALID = [
        snippet("""
            import torch

            def check(x):
                if x.any():
                    return x
                return -x
        """),
        snippet("""
            import torch

            @torch.compile
            def step(x, training: bool):
                if training and x.dim() == 2:
                    return x.sum(0)
                return torch.where(x > 0, x, -x)
        """),
        snippet("""
            import torch

            @torch.compile
            def step(x, items):
                if any(v is None for v in items):
                    return x
                if torch.compiler.is_compiling():
                    return x * 2
                return x
        """),
        snippet("""
            import torch
            from torch import nn

            class Encoder(nn.Module):
                def forward(self, x, mask=None):
                    long_enough = x.shape[-1] > 8 and self.training
                    if not long_enough or mask is None:
                        return x
                    noise = torch.rand([])
                    if noise is not None and x.dim() == 3:
                        return x + noise
                    return x

            model = torch.compile(Encoder())
        """),
    ]
    INVALID = [
        snippet("""
            import torch

            @torch.compile
            def step(x, mask):
                if (mask > 0).any():  # error
                    x = x * mask
                return x
        """),
        snippet("""
            import torch
            from torch import nn

            class Decoder(nn.Module):
                def forward(self, x, eos):
                    while not torch.equal(x[-1], eos):  # error
                        x = x[:-1]
                    return x

            model = torch.compile(Decoder())
        """),
        snippet("""
            import torch

            def clamp_if_needed(x):
                return x.clamp(0) if x.min().item() < 0 else x  # error

            @torch.compile
            def step(x):
                ok = bool(x.isfinite().all())  # error
                return clamp_if_needed(x)
        """),
        snippet("""
            import torch
            from torch import nn

            class Encoder(nn.Module):
                def forward(self, hidden_states):
                    for layer in self.layers:
                        dropout_probability = torch.rand([])
                        skip_the_layer = self.training and dropout_probability < self.layerdrop
                        if not skip_the_layer or self.synced:  # error
                            hidden_states = layer(hidden_states)
                        if dropout_probability < self.layerdrop:  # error
                            continue
                    return hidden_states

            model = torch.compile(Encoder())
        """),
    ]


def _is_builtin_receiver(expr: cst.BaseExpression) -> bool:
    """``"".join``-style receivers are Python values, not tensors."""
    return isinstance(expr, (cst.SimpleString, cst.List, cst.Tuple, cst.Dict, cst.Set))
