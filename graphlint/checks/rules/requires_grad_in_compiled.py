from __future__ import annotations

import libcst as cst

from graphlint.checks.rules._break import BreakRule
from graphlint.checks.rules.base import SiteContext, snippet

SETATTR_GB = ("GB0206",)  # "setattr() on Tensor.requires_grad"
METHOD_GB = ("GB8985",)  # "requires_grad_() intermediate leaked as output"


class RequiresGradInCompiled(BreakRule):
    """## What it does
    Flags turning gradients on or off for a tensor the compiled code computed itself:
    `hidden = x[:, None]` … `hidden.requires_grad = True`, or `hidden.requires_grad_()`. Not
    flagged, because dynamo traces them (checked with torch 2.13): setting it on a parameter
    (`for p in self.parameters(): p.requires_grad = False`, `self.proj.weight.requires_grad =
    False`), on an input of the function, or on a name that only aliases one of these.

    ## Why is this bad?
    Dynamo cannot change `requires_grad` of a tensor inside the graph it is building: "setattr()
    on Tensor.requires_grad" (GB0206) for the assignment, "requires_grad_() intermediate leaked as
    output" (GB8985) for the method. The graph splits there on every call, and with
    `fullgraph=True` the compile fails (layer: dynamo). In the Hugging Face corpus every
    wav2vec2-style feature encoder does it in training, "for gradient checkpointing".

    ## Example
    ```python
    def forward(self, input_values):
        hidden = input_values[:, None]
        if self.training:
            hidden.requires_grad = True
        return self.conv(hidden)
    ```

    ## Use instead
    Set it on the input before the compiled call (`input_values.requires_grad_()`), or leave it
    to autograd: a tensor computed from parameters that require grad already requires grad.

    ## Fix safety
    No automatic fix.

    ## References
    torchair#212 (dynamo "Unsupported" on transformers code: keep it out of the compiled
    forward); torch 2.13 graph-break registry GB0206, GB8985; the Hugging Face graph-break corpus
    (penguinwu/oss-model-graph-break-corpus: Wav2Vec2, Hubert, SEW, WavLM, UniSpeech feature encoders)
    """

    code = "GL110"
    slug = "requires-grad-in-compiled"
    summary = "requires_grad set on a tensor computed inside a compiled region (a graph break)"
    message = "requires_grad set on a tensor this compiled code computed: dynamo breaks the graph here"
    refs = ("torchair#212",)
    predicts = SETATTR_GB + METHOD_GB

    def visit_AssignTarget(self, node: cst.AssignTarget, ctx: SiteContext) -> None:
        target = node.target
        if isinstance(target, cst.Attribute) and target.attr.value == "requires_grad" and ctx.computed_here(target.value):
            ctx.report(self, node, predicts=SETATTR_GB)

    def visit_Call(self, node: cst.Call, ctx: SiteContext) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_" and ctx.computed_here(func.value):
            ctx.report(self, node, "requires_grad_() on a tensor this compiled code computed: dynamo breaks the graph here", predicts=METHOD_GB)

    VALID = [
        snippet("""
            import torch
            from torch import nn

            class Frozen(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x):
                    for p in self.proj.parameters():
                        p.requires_grad = False
                    self.proj.bias.requires_grad = False
                    return self.proj(x)

            model = torch.compile(Frozen())
        """),
        snippet("""
            import torch

            @torch.compile
            def step(x):
                x.requires_grad = True
                inputs = x
                inputs.requires_grad_()
                return inputs * 2
        """),
        snippet("""
            import torch

            def prepare(batch):
                hidden = batch[:, None]
                hidden.requires_grad = True
                return hidden

            step = torch.compile(lambda x: x * 2)
        """),
    ]
    INVALID = [
        snippet("""
            import torch
            from torch import nn

            class FeatureEncoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.conv = nn.Conv1d(1, 4, 3)

                def forward(self, input_values):
                    hidden = input_values[:, None]
                    if self.training:
                        hidden.requires_grad = True  # error
                    return self.conv(hidden)

            model = torch.compile(FeatureEncoder(), fullgraph=True)
        """),
        snippet("""
            import torch

            @torch.compile
            def step(x):
                y = x * 2
                y.requires_grad_(True)  # error
                return y + 1
        """),
        snippet("""
            import torch

            @torch.compile
            def step(x):
                x = x.detach()
                x.requires_grad = False  # error
                return x
        """),
    ]
