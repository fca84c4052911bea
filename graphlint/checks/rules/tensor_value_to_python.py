from __future__ import annotations

import libcst as cst

from graphlint.checks import dynamo
from graphlint.checks.rules._break import BreakRule
from graphlint.checks.rules.base import SiteContext, snippet
from graphlint.checks.syntax import keyword, positional


class TensorValueToPython(BreakRule):
    """## What it does
    Flags a tensor's value turned into a Python number or used as a size inside a compiled
    region: `int(x.max())`, `float(mask.sum())`, `math.ceil(lengths.max())`, `int(t)` for a
    tensor parameter, and a reduced tensor given where a size goes:
    `torch.arange(lengths.max())`, `torch.zeros(n)` with `n = mask.sum()`,
    `F.pad(x, (0, pad.sum()))`, `range(counts.max())`. (`.item()` and `.tolist()` themselves
    are GL202's.)

    ## Why is this bad?
    A Python number needs the value on the host: dynamo calls `.item()` (with
    `capture_scalar_outputs=False`, the default: a graph break, GB0124) or makes a
    data-dependent size (GB0033). The graph splits there on every call, and under capture the
    read is a device sync (layer: dynamo). With `fullgraph=True` torch 2.13 keeps the value in
    the graph as an unbacked symbol instead, so it is a warning there.

    ## Example
    ```python
    max_len = int(lengths.max())
    mask = torch.arange(max_len, device=x.device) < lengths[:, None]
    ```

    ## Use instead
    Sizes from shapes (`x.shape[1]`), or a bound known before compiling; keep values as
    tensors (`torch.where`, masks) instead of Python numbers.

    ## Fix safety
    No automatic fix.

    ## References
    torchair#212 (dynamo "Unsupported" on transformers code: keep it out of the compiled
    forward, check with `aot_eager` first); torch 2.13 graph-break registry GB0124, GB0033; the Hugging Face graph-break corpus
    (penguinwu/oss-model-graph-break-corpus)
    """

    code = "GL107"
    slug = "tensor-value-to-python"
    summary = "a tensor's value made a Python number or a size (int(x.max()), arange(t.sum())) in a compiled region"
    message = "tensor value read back to Python: dynamo breaks the graph here"
    refs = ("torchair#212",)
    predicts = ("GB0124", "GB0033")
    breaks_fullgraph = False

    def visit_Call(self, node: cst.Call, ctx: SiteContext) -> None:
        name = ctx.qualify(node.func)
        table = dynamo.value_read()
        args = positional(node)
        if name in table["conversions"]:
            if len(args) == 1 and ctx.is_tensor_value(args[0].value):
                codes = tuple(table["conversions"][name])
                ctx.report(self, node, f"{name}() of a tensor value: dynamo reads it back here (a graph break)", predicts=codes)
        elif name in table["sized"]:
            sizes = [a.value for a in args[: table["sized"][name]]] if table["sized"][name] else [a.value for a in args]
            if name == "torch.nn.functional.pad":  # F.pad(input, pad): only the pad is sizes
                pad = args[1].value if len(args) >= 2 else (keyword(node, "pad").value if keyword(node, "pad") else None)
                sizes = [e.value for e in pad.elements] if isinstance(pad, (cst.Tuple, cst.List)) else []
            if any(ctx.is_tensor_value(size) for size in sizes):
                ctx.report(
                    self, node, f"a tensor value as a size of {name}(): dynamo reads it back here (a graph break)",
                    predicts=tuple(table["sized_gb"]),
                )

    VALID = [
        snippet("""
            import torch

            @torch.compile
            def step(x, n: int):
                width = int(x.shape[-1] * 0.5)
                pad = torch.zeros(x.shape[0], width, device=x.device)
                return torch.cat([x, pad], dim=-1)[:, : max(n, 1)]
        """),
        snippet("""
            import numpy as np
            import torch

            def summarize(x):
                return int(x.max())

            @torch.compile
            def step(x):
                table = np.arange(4)
                return x * int(np.sum(table))
        """),
        snippet("""
            import torch
            import torch.nn.functional as F

            @torch.compile
            def step(x: torch.Tensor, lengths):
                steps = range(len(lengths))
                pad = [(0, 0)] * x.ndim
                y = F.pad(x, pad=sum(pad, ()), value=0.0)
                return F.pad(y, (0, x.shape[-1] % 8)), torch.full((2,), x.max()), steps
        """),
    ]
    INVALID = [
        snippet("""
            import torch

            @torch.compile
            def step(x, lengths):
                max_len = int(lengths.max())  # error
                return torch.arange(max_len) < lengths[:, None]
        """),
        snippet("""
            import math
            import torch
            import torch.nn.functional as F
            from torch import nn

            class Pad(nn.Module):
                def forward(self, x: torch.Tensor, mask):
                    n = mask.sum()
                    y = F.pad(x, (0, n))  # error
                    return y * float(x)  # error

            model = torch.compile(Pad())
        """),
        snippet("""
            import math
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x, counts):
                blocks = math.ceil(counts.max() / 4)  # error
                out = torch.zeros(torch.sum(counts))  # error
                return out, blocks
        """),
    ]
