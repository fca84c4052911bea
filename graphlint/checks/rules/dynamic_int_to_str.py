from __future__ import annotations

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.rules.base import Rule, SiteContext, snippet
from graphlint.checks.syntax import positional


class DynamicIntToStr(Rule):
    """## What it does
    Flags `str()`, `repr()`, `format()`, f-strings, `str.format` and `%` formatting applied to a
    dynamic int inside a compiled region: a tensor size (`x.shape[0]`, `x.size(1)`,
    `x.numel()`, names assigned from them) or an `int` parameter of a compiled function.

    ## Why is this bad?
    Under dynamo a dynamic int is a `SymInt`. Turning it into a string forces dynamo to
    specialise on it or fails outright: "Dynamo 无法 trace builtin str(int)" — torch_npu's
    npugraph_ex core-control scope called `str()` on the dynamic `aic_num` argument and the
    whole model fell out of graph mode (layer: dynamo).

    ## Example
    ```python
    @torch.compile(dynamic=True)
    def cached_model(x, aic_num: int):
        with scope.limit_core_num(str(aic_num)):
            return x * 2
    ```

    The message of a `raise` or of an `assert` is not flagged, nor anything in a block that
    always ends by raising (`if bad: msg = f"n={n}"; raise ValueError(msg)`): it is built only on
    the failing path, which dynamo does not trace (`assert n % 8 == 0, f"n={n}"`).

    ## Use instead
    Pass such values as module attributes or constants, not as dynamic inputs; build strings
    outside the compiled function.

    ## Fix safety
    No automatic fix.

    ## References
    torchair#602
    """

    code = "GL102"
    slug = "dynamic-int-to-str"
    summary = "str()/f-string/format on a dynamic int inside a compiled region"
    message = "string formatting of a dynamic int (SymInt): dynamo cannot trace str() of it"
    default_severity = "error"
    refs = ("torchair#602",)
    predicts = ("GB0059",)

    def visit_Call(self, node: cst.Call, ctx: SiteContext) -> None:
        if ctx.qualify(node.func) in apis.STRING_CONVERSIONS:
            args = positional(node)[:1]
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "format":
            args = list(node.args)
        else:
            return
        self._check(node, [a.value for a in args], ctx)

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression, ctx: SiteContext) -> None:
        self._check(node, [node.expression], ctx)

    def visit_BinaryOperation(self, node: cst.BinaryOperation, ctx: SiteContext) -> None:
        if isinstance(node.operator, cst.Modulo) and isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString)):
            right = node.right
            values = [e.value for e in right.elements] if isinstance(right, cst.Tuple) else [right]
            self._check(node, values, ctx)

    def _check(self, node: cst.CSTNode, values: list[cst.BaseExpression], ctx: SiteContext) -> None:
        if ctx.in_error_message:
            return  # built only when the check fails: dynamo never traces it on the passing path
        kinds = {ctx.dynamic_int(v) for v in values} - {None}
        if "shape" in kinds:
            ctx.report(self, node)
        elif "param" in kinds:
            ctx.report(self, node, entry_scope_only=True)

    VALID = [
        snippet("""
            import torch

            def log_shape(x):
                return f"batch={x.shape[0]}"
        """),
        snippet("""
            import torch

            @torch.compile
            def step(x, name: str):
                tag = str(name)
                return x * len(tag)
        """),
        snippet("""
            import torch

            def helper(x, n: int):
                return str(n)

            @torch.compile
            def step(x):
                return x + 1
        """),
        snippet("""
            import torch

            @torch.compile
            def step(x):
                n = x.shape[0]
                assert n % 8 == 0, f"batch {n} is not a multiple of 8"
                if x.size(1) > 4096:
                    raise ValueError("too long: %d" % x.size(1))
                if n > 1024:
                    raise RuntimeError("batch {} too large".format(n)) from None
                if n % 3 == 0:
                    message = f"batch {n} is a multiple of 3"
                    raise ValueError(message)
                return x * 2
        """),
    ]
    INVALID = [
        snippet("""
            import torch

            @torch.compile(dynamic=True)
            def cached_model(x, aic_num: int):
                key = str(aic_num)  # error
                return x * 2
        """),
        snippet("""
            import torch
            from torch import nn

            class Attention(nn.Module):
                def forward(self, x):
                    bsz, seqlen, _ = x.shape
                    name = f"attn_{seqlen}"  # error
                    return x.view(bsz, seqlen, -1)

            model = torch.compile(Attention())
        """),
        snippet("""
            import torch

            @torch.compile
            def step(x):
                n = x.size(0)
                label = "rows=%d" % n  # error
                return x.sum(), "{}".format(x.numel())  # error
        """),
        snippet("""
            import torch

            @torch.compile
            def step(x):
                n = x.shape[0]
                assert f"n={n}", "the message is fine"  # error
                return x * 2
        """),
    ]
