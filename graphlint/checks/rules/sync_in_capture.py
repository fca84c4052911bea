from __future__ import annotations

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.rules._capture import CaptureRule
from graphlint.checks.rules.base import SiteContext, snippet
from graphlint.checks.syntax import positional


class SyncInCapture(CaptureRule):
    """## What it does
    Flags operations that wait for the device or whose output shape depends on tensor values,
    inside a capture region: `.item()`, `.tolist()`, `synchronize()`, `nonzero()`,
    one-argument `torch.where(cond)`, `masked_select`, `unique`, `bincount`, and boolean-mask
    indexing `x[x > 0]` / `x[mask]`, and, in an eager capture (`torch.npu.graph`), an `if` on a
    device tensor's value (`if seq_len > self.max_seq_len_cached:` after `seq_len =
    torch.max(position_ids) + 1`, `if not mask.any():`: `bool()` reads it back; where dynamo
    traces, the branch is a graph break, GL105). Reading back a host tensor waits for nothing, and is not
    flagged: one made on the host (`device="cpu"`, `.cpu()`, a `_cpu` name), or host work alone
    on Python values (`torch.quantile(torch.tensor(times), q=0.5).item()`).

    ## Why is this bad?
    A captured graph replays fixed kernels with fixed shapes and may not synchronise the stream.
    These operations copy a value to the host (a stream sync: "Not allow to sync
    captured-stream") or size their output from data the capture cannot know. In a plain
    compiled region they are graph breaks (layer: capture).

    ## Example
    ```python
    valid = scores[scores > threshold]
    ```

    `.item()` / `.tolist()` of a tensor known to be on the host (made with `device="cpu"`, or
    named `*_cpu` as serving code names its host copies; also when it was made so in another
    function and reached here only through arguments, returns or attributes, as the value flow
    shows) waits for nothing and is not flagged.
    Assigning a scalar through a mask (`x[mask] = -1`, `x[x > 0] = float("-inf")`, an `int`
    parameter) is
    `masked_fill`: no sync, and the shape stays static, so it is not flagged; reading through a
    mask, or assigning a tensor through one, is.

    ## Use instead
    Keep shapes static: `torch.where(scores > threshold, scores, 0)`, or masks multiplied in;
    read values back only after replay.

    ## Fix safety
    No automatic fix.

    ## References
    torchair#236
    """

    code = "GL202"
    slug = "sync-in-capture"
    summary = ".item()/.tolist()/synchronize()/nonzero/mask indexing in a capture region"
    message = "device sync or data-dependent shape inside graph capture"
    refs = ("torchair#236",)
    predicts = ("GB0124", "GB0109", "GB0033", "GB0036", "GB0037")

    def visit_Call(self, node: cst.Call, ctx: SiteContext) -> None:
        func = node.func
        name = ctx.qualify(func)
        if name in apis.SYNC_FUNCTIONS:
            ctx.report(self, node)
        elif name == apis.ONE_ARGUMENT_WHERE:
            if len(positional(node)) == 1 and len(node.args) == 1:
                ctx.report(self, node, "one-argument torch.where(cond) is nonzero(): a data-dependent shape inside graph capture")
        elif isinstance(func, cst.Attribute) and func.attr.value in apis.SYNC_METHODS:
            if func.attr.value in apis.READBACK_METHODS and (
                ctx.known_device(func.value) == apis.HOST_DEVICE or ctx.host_side(node)
            ):
                return  # a host tensor's values are read without waiting for the device
            if name is None or not name.startswith(("torch.", "torch_npu.")) or func.attr.value == "synchronize":
                ctx.report(
                    self, node, f".{func.attr.value}() inside graph capture: device sync or data-dependent shape",
                    host_receiver=func.attr.value in apis.READBACK_METHODS,
                )

    def visit_If(self, node: cst.If, ctx: SiteContext) -> None:
        if _reads_device_truth(node.test, ctx):
            # where dynamo traces, the branch is a graph break (GL105) and the read runs between
            # graphs, not in one: only an eager capture (torch.npu.graph) reads it while capturing
            ctx.report(self, node, "`if` on a device tensor inside graph capture: bool() reads its value back (a device sync)", untraced=True)

    def visit_Subscript(self, node: cst.Subscript, ctx: SiteContext) -> None:
        stored = ctx.assigned_value(node)
        if stored is not None and _is_scalar(stored, ctx):
            return  # ``x[mask] = -1`` is masked_fill: no sync, the shape stays static
        if stored is not None and (ctx.made_by(node.value) or "").startswith("numpy."):
            return  # a store into a numpy array: host memory under capture, traced without a break by dynamo
        for element in node.slice:
            if isinstance(element.slice, cst.Index) and ctx.is_mask(element.slice.value):
                ctx.report(self, node, "boolean-mask indexing inside graph capture: the output shape depends on the data")
                return

    VALID = [
        snippet("""
            import torch

            def grow(cache, position_ids, lengths: list[int]):
                total = torch.tensor(lengths).sum()
                if total > cache.shape[0]:
                    cache = torch.cat([cache, cache])
                return cache

            @torch.compile(mode="reduce-overhead")
            def traced(cache, position_ids):
                if torch.max(position_ids) > cache.shape[0]:  # a graph break where dynamo traces: GL105
                    cache = torch.cat([cache, cache])
                return cache

            def run(g, cache, position_ids):
                with torch.npu.graph(g):
                    out = grow(cache, position_ids, [1, 2])
                return out
        """),
        snippet("""
            import torch

            def cross(x, lens, capturing: bool):
                if capturing:
                    skip = False
                else:
                    skip = lens.max() == 0
                if not skip:  # the name's binding where the capture runs is a bool
                    x = x * 2
                return x

            def run(g, x, lens):
                with torch.npu.graph(g):
                    out = cross(x, lens, True)
                return out
        """),
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x, times: list[float]):
                median = torch.quantile(torch.tensor(times), q=0.5).item()
                return x * 2, median
        """),
        snippet("""
            import numpy as np
            import torch

            @torch.compile(mode="reduce-overhead")
            def spec_augment(x, idxs, shape):
                batch, length = shape
                spans = np.array(idxs)
                spans[spans > length - 1] = length - 1
                return x * len(spans)
        """),
        snippet("""
            import torch

            def postprocess(scores):
                return scores[scores > 0.5].tolist()
        """),
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x, mask):
                return torch.where(mask > 0, x, torch.zeros_like(x))
        """),
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x):
                return x[:, :4] * x.size(0)
        """),
        snippet("""
            import math
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(logits, token_ids):
                mask = token_ids == 0
                logits[mask] = -1
                logits[token_ids < 0] = float("-inf")
                logits[~mask] = -math.inf
                logits[mask & (token_ids > 3)] = torch.finfo(logits.dtype).min
                return logits
        """),
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(topk_ids, num_token_non_padded, fill_value: int, forward_batch):
                indices = torch.arange(topk_ids.shape[0], device=topk_ids.device)
                topk_ids[indices >= num_token_non_padded, :] = fill_value
                lens = forward_batch.seq_lens_cpu.tolist()
                host = torch.tensor([1, 2], device="cpu")
                return topk_ids, lens, host.item()
        """),
    ]
    INVALID = [
        snippet("""
            import torch

            def grow(cache, position_ids):
                seq_len = torch.max(position_ids) + 1
                if seq_len > cache.shape[0]:  # error
                    cache = torch.cat([cache, cache])
                if not position_ids.any():  # error
                    return cache
                return cache[:4]

            def run(g, cache, position_ids):
                with torch.npu.graph(g):
                    out = grow(cache, position_ids)
                return out
        """),
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x):
                n = x.sum().item()  # error
                return x * n
        """),
        snippet("""
            import torch

            def select(scores):
                keep = scores > 0.5
                return scores[keep]  # error

            g = torch.npu.NPUGraph()
            static_scores = torch.zeros(8, device="npu")
            g.capture_begin()
            out = select(static_scores)
            idx = torch.nonzero(static_scores)  # error
            g.capture_end()
        """),
        snippet("""
            import torch
            from torch import nn

            class Router(nn.Module):
                def forward(self, logits):
                    torch.npu.synchronize()  # error
                    rows = torch.where(logits > 0)  # error
                    kept = logits[logits > 0]  # error
                    return kept.unique()  # error

            router = torch.compile(Router(), backend="npugraph_ex")
        """),
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(logits, replacement):
                logits[logits > 0] = replacement  # error
                logits[logits < 0] += 1  # error
                return logits
        """),
    ]


def _reads_device_truth(test: cst.BaseExpression, ctx: SiteContext) -> bool:
    """Whether Python's truth of ``test`` surely reads a tensor that may be on the device: a
    comparison with a tensor's value (``seq_len > self.max_seq_len_cached`` after ``seq_len =
    torch.max(position_ids) + 1``), a reduced tensor (``if mask.any():``), ``not``, and the left
    side of ``and`` / ``or``; not one made on the host (``torch.rand([]) < p``, ``device="cpu"``,
    a ``_cpu`` name), nor a bare name (``if not skip:``)."""
    if isinstance(test, cst.BooleanOperation):
        return _reads_device_truth(test.left, ctx)  # the right side may not be evaluated
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _reads_device_truth(test.expression, ctx)
    if isinstance(test, cst.Comparison):
        if not ctx.is_tensor_condition(test):
            return False
        sides = [test.left, *(c.comparator for c in test.comparisons)]
        return any(ctx.is_tensor_value(side) and not _on_host(side, ctx) for side in sides)
    if isinstance(test, cst.Name):
        # a name is known only as its last binding in any branch: ``skip = False`` where the
        # capture runs, ``skip = lens.max() == 0`` in the ``else`` it never takes (sglang's Mllama)
        return False
    return ctx.is_tensor_value(test) and not _on_host(test, ctx)


def _on_host(expr: cst.BaseExpression, ctx: SiteContext) -> bool:
    """A tensor known to be on the host: made there, or computed from host tensors alone."""
    if ctx.known_device(expr) == apis.HOST_DEVICE or ctx.host_work(expr) is not None:
        return True
    if isinstance(expr, cst.BinaryOperation):
        return all(_on_host(side, ctx) or _is_scalar(side, ctx) for side in (expr.left, expr.right))
    return False


_SCALAR_LITERALS = (cst.Integer, cst.Float, cst.Imaginary)
_TYPE_LIMITS = frozenset({"torch.finfo", "torch.iinfo"})


def _is_scalar(expr: cst.BaseExpression, ctx: SiteContext) -> bool:
    """A Python number: a literal, ``True``/``False``, ``float("-inf")``, ``math.inf``,
    ``torch.finfo(dtype).min``, or arithmetic of them."""
    if isinstance(expr, _SCALAR_LITERALS):
        return True
    if isinstance(expr, cst.Name):  # True, an ``int`` parameter, a size read from a shape
        return expr.value in ("True", "False") or ctx.dynamic_int(expr) is not None
    if isinstance(expr, cst.UnaryOperation):
        return _is_scalar(expr.expression, ctx)
    if isinstance(expr, cst.BinaryOperation):
        return _is_scalar(expr.left, ctx) and _is_scalar(expr.right, ctx)
    if isinstance(expr, cst.Call):  # float("-inf"); not float(t), itself a read-back
        return ctx.qualify(expr.func) in ("float", "int", "bool") and all(
            isinstance(arg.value, cst.SimpleString) or _is_scalar(arg.value, ctx) for arg in expr.args
        )
    if isinstance(expr, cst.Attribute):
        owner = expr.value
        if isinstance(owner, cst.Call) and ctx.qualify(owner.func) in _TYPE_LIMITS:
            return True
        return (ctx.qualify(expr) or "").startswith("math.")
    return False
