from __future__ import annotations

import libcst as cst

from graphlint.checks.rules._capture import CaptureRule, is_factory_without_device, moves_to_device
from graphlint.checks.rules.base import SiteContext, snippet


class HostTensorInCapture(CaptureRule):
    """## What it does
    Flags tensor factories called without `device=` inside a capture region: `torch.arange`,
    `zeros`, `ones`, `full`, `empty`, `rand`, `randn`, `tensor`, `linspace`, `eye`, …
    (`*_like` factories keep their input's device and are fine). A factory moved at once with
    `.to(device)` is also a GL201 (the copy), whose fix settles both. A tensor made on the host
    on purpose, `device="cpu"` or `pin_memory=True` (host-side bookkeeping, staging buffers),
    is not flagged; copying it to the device is GL201's. Nor is a factory that only host work
    read back to Python uses (`torch.quantile(torch.tensor(times), q=0.5).item()`: statistics of
    Python floats, which never meet a device tensor), nor one handed `**kwargs`, which may carry
    its `device=` (`torch.arange(0, n, **self.int32_kwargs)`), nor one made inside
    `with x.device:` or `with torch.device(d):` (a `torch.device` is a context manager that makes
    itself the factories' default: sglang's `with forward_batch.out_cache_loc.device:`). Nor is a
    0-d tensor of a number fixed in every call (a literal, `self.config.hidden_size**0.5`,
    `torch.finfo(dt).min`) whose every use is an operand torch_npu hands its kernel as a scalar
    (`h *= torch.tensor(2.0)`, `h / torch.sqrt(torch.tensor(2.0))`: the `other` of mul, div, add
    and sub, `graphlint/checks/npu_scalar_operands.toml`); `torch.maximum(h, t)` copies it, and
    so does `torch.tensor(2.0) * h`. Nor an empty one moved at once (`torch.tensor([]).to(d)`).

    ## Why is this bad?
    Without `device=` the tensor is made on the host. Inside a captured graph it is either a
    constant frozen at capture time or, when it reaches a device op, a host→device copy that
    capture forbids ("Not allow to sync captured-stream"); torchair's advice is to create
    tensors directly on the NPU (layer: capture).

    ## Example
    ```python
    scale = torch.tensor([0.5, 2.0])
    ```

    ## Use instead
    ```python
    scale = torch.tensor([0.5, 2.0], device=x.device)
    ```
    or make it a buffer created once, outside the captured code.

    ## Fix safety
    No automatic fix: the right device expression depends on the surrounding code.

    ## References
    torchair#236
    """

    code = "GL203"
    slug = "host-tensor-in-capture"
    summary = "tensor factory without device= in a capture region"
    message = "tensor factory without device= inside graph capture makes a host tensor"
    refs = ("torchair#236",)

    def visit_Call(self, node: cst.Call, ctx: SiteContext) -> None:
        if not is_factory_without_device(node, ctx) or ctx.host_side(node) or ctx.scalar_operand_only(node):
            return
        empty = ctx.empty_tensor(node) if ctx.moved_at_once(node, lambda call: moves_to_device(call, ctx)) else None
        if empty != "always":
            ctx.report(self, node, void_in_capture=empty == "capture")

    VALID = [
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x, times: list[float]):
                median = torch.quantile(torch.tensor(times), q=0.5).item()
                return x * 2, median
        """),
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x):
                return x + torch.ones(4, device=x.device)
        """),
        snippet("""
            import torch

            def make_mask(n):
                return torch.ones(n, n).tril()

            @torch.compile(mode="reduce-overhead")
            def step(x):
                return x * torch.ones_like(x)
        """),
        snippet("""
            import torch

            def run(g, static_x):
                with torch.npu.graph(g):
                    static_x.mul_(2)
                return torch.arange(static_x.shape[0])
        """),
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x, n: int):
                host_positions = torch.arange(n, device="cpu")
                staging = torch.empty(n, dtype=torch.int64, pin_memory=True)
                return x, host_positions, staging
        """),
        snippet("""
            import torch

            class Backend:
                def __init__(self, device):
                    self.int32_kwargs = {"device": device, "dtype": torch.int32}

                @torch.compile(mode="reduce-overhead")
                def positions(self, n: int):
                    return torch.arange(0, n, **self.int32_kwargs)
        """),
        snippet("""
            import torch
            from torch import nn

            class Embedder(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.config = config
                    self.embed = nn.Embedding(16, 8)

                def forward(self, ids):
                    h = self.embed(ids)
                    normalizer = torch.tensor(self.config.hidden_size**0.5, dtype=h.dtype)
                    h *= normalizer
                    return h / torch.sqrt(torch.tensor(2.0))

            def run(g, ids):
                with torch.npu.graph(g):
                    Embedder(None)(ids)
        """),
        snippet("""
            import torch

            def run(g, static_x, n: int):
                with torch.npu.graph(g):
                    with static_x.device:
                        mask = torch.zeros(n, dtype=torch.bool)
                    static_x.masked_fill_(mask, 0)
        """),
    ]
    INVALID = [
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x):
                scale = torch.tensor([0.5, 2.0])  # error
                return x * scale
        """),
        snippet("""
            import torch as t
            from torch import nn

            class Block(nn.Module):
                def forward(self, x):
                    return x + t.zeros(x.shape[-1])  # error

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([Block() for _ in range(2)])

                def forward(self, x):
                    for layer in self.layers:
                        x = layer(x)
                    return x

            model = Model()
            model.compile(mode="reduce-overhead")
        """),
        snippet("""
            import torch

            def run(g, static_x):
                with torch.npu.graph(g):
                    floor = torch.tensor(torch.finfo(static_x.dtype).min)  # error
                    static_x.copy_(torch.maximum(static_x, floor))
        """),
        snippet("""
            import torch
            from torch import arange

            def run(g, static_x):
                with torch.cuda.graph(g):
                    idx = arange(static_x.shape[0])  # error
                    static_x.add_(idx)
        """),
    ]
