from __future__ import annotations

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.rules._capture import CaptureRule, copies_nothing, moved_host_factory, moves_to_device
from graphlint.checks.rules.base import SiteContext, snippet
from graphlint.checks.syntax import keyword


class HostDeviceCopyInCapture(CaptureRule):
    """## What it does
    Flags host↔device copies inside a capture region: `.to(device)`, `.cuda()`, `.npu()`,
    `.cpu()`, `.numpy()`, `copy_(...)` from a host tensor, and `torch.tensor(data, device=...)`.
    A host-made factory moved with `.to(device)` (`torch.arange(n).to(x.device)`) is both this
    copy and a GL203 host tensor; the fix here settles both. Moves that copy nothing are not
    flagged: `torch.tensor(data, device="cpu")` (host-side work on purpose), `.cpu()` / `.numpy()`
    of a tensor made on the host (here, or in another function whose value reaches here only
    through arguments, returns or attributes), `.to(d)` of a tensor made on or moved to that same `d`
    (`t = torch.zeros(n, device=x.device)` … `t.to(x.device)`, `torch.zeros_like(h).to(h.device)`:
    a `*_like` factory makes its tensor where its input is; the device is kept through
    device-preserving methods, `.to(dtype)`, comparisons and arithmetic with a tensor on it:
    `mask = mask.repeat(b, 1) >= lens.unsqueeze(1)` … `mask.unsqueeze(1).to(x.device)`), and `.to(x.device)` of what lives
    with the model's weights: a parameter or registered buffer (`self.inv_freq.to(x.device)`,
    also read into a name first, or one a base class in another file keeps:
    `self.cos_sin_cache` that `RotaryEmbeddingBase` registers), one the file registers on a module it is handed
    (`layer.register_parameter("input_scale", p)` in `create_weights`, then
    `layer.input_scale.expand(m, 1).to(x.device)` with `layer: torch.nn.Module`)
    or a submodule's output (`pos = self.embed_positions(ids)` … `pos.to(x.device)`; in
    capture the model is on one device), also across a call: a parameter that every call of its
    function hands one of these (`launch(cache=self.cos_sin_cache)`, then `cache.to(q.device)` in
    `launch` before anything rebinds `cache`; only where all its calls are in sight), and the move made once where the tensor is kept
    (`if self.cache.device != x.device: self.cache = self.cache.to(x.device)`: the first call
    moves it, and a capture needs warm-up calls before it, as `torch.cuda.graphs` and vLLM's
    runners make; the captured call finds it moved). A host tensor moved to the
    device (`torch.zeros(n, device="cpu", pin_memory=True).to(device)`) still is a copy, and so is
    `x = t.to(d)` under that test (the kept tensor never moves). Where the framework's loader
    builds the model under `with torch.device(target)` (`device-built-classes`: sglang, vLLM), a
    plain tensor attribute made while it builds (`self.ids = torch.tensor(ids)` in `__init__`,
    an alias of a buffer kept then) is on the device: its `.to(x.device)` copies nothing. Nor is
    moving what a project function returns to the device of the argument it made it on
    (`r = zero_experts(..., hidden_states=h)` … `r.to(h.device)`, where every return of
    `zero_experts` is `torch.zeros_like(hidden_states)`, `hidden_states.new_*(...)`, ... of a
    parameter it never rebinds; only where every function the call runs is in sight), or to the
    device of what another call made from that argument (`y = self.experts(h, topk)`, `y *= s`
    in place, … `r.to(y.device)`, where every `forward` the call runs returns on the device of
    the parameter it hands `h`, or `device-returns` says so of one whose returns come from
    kernels: sglang's MoE layers; `h` may be rebound to a view of itself), nor, in a
    capture, moving capture metadata the framework stores on the device (`capture-device-attributes`:
    sglang's Ascend `get_attn_backend().forward_metadata.seq_lens`). Nor is moving a tensor of no
    elements (`torch.as_tensor([], device=d)`, `torch.zeros(0, n).to(d)`, or `torch.as_tensor(x,
    device=d)` of an `x` empty in every capture: torch_npu's `copy_` returns at once; the last
    still warns in a compiled region, whose batches may fill `x`).

    ## Why is this bad?
    During aclgraph capture (reduce-overhead, npugraph_ex, `torch.npu.graph`) `aclrtMemcpy` and
    stream synchronisation are unsafe calls: capture aborts with "Not allow to sync
    captured-stream" (qwen2.5-vl; the typical trigger is `arange` followed by `.to(device)`).
    In a plain compiled region the copy is a slow path (layer: capture).

    ## Example
    ```python
    positions = torch.arange(seq_len).to(x.device)
    ```

    ## Use instead
    ```python
    positions = torch.arange(seq_len, device=x.device)
    ```

    ## Fix safety
    Moving `device=` into a factory call (`torch.arange(n).to(d)` → `torch.arange(n, device=d)`)
    is safe: the result is the same tensor, made where it is used. Other copies have no fix.

    ## References
    torchair#236
    """

    code = "GL201"
    slug = "host-device-copy-in-capture"
    summary = "host↔device copy (.to(device), .cpu(), .npu(), copy_ from host) in a capture region"
    message = "host↔device copy inside graph capture: capture forbids memcpy/sync (\"Not allow to sync captured-stream\")"
    fix_title = "Create the tensor on the device: pass `device=` to the factory"
    fix_safety = "safe"
    refs = ("torchair#236",)

    def visit_Call(self, node: cst.Call, ctx: SiteContext) -> None:
        func = node.func
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        if ctx.qualify(func) in ("torch.tensor", "torch.as_tensor"):
            device = keyword(node, "device")
            empty = ctx.empty_tensor(node)  # torch_npu's copy_ of no elements returns at once
            if device is not None and ctx.device_text(device.value) != apis.HOST_DEVICE and empty != "always":
                message = "torch.tensor(data, device=...) copies host data to the device inside graph capture"
                ctx.report(self, node, message, void_in_capture=empty == "capture")
        elif method == "to":
            if ctx.on_module_device(func.value):  # type: ignore[union-attr]
                return  # a weight, buffer or submodule output: already on the model's device
            if ctx.moves_once(node):
                return  # if t.device != d: t = t.to(d) copies once, in the warm-up before capture
            empty = ctx.empty_tensor(func.value)  # type: ignore[union-attr]
            if moves_to_device(node, ctx) and not copies_nothing(node, ctx) and empty != "always":
                fixable = moved_host_factory(node, ctx) is not None and len(node.args) == 1
                # self.cos_sin_cache of a base class in another file, or a parameter every call
                # hands a buffer (f(cache=self.cos_sin_cache)), or a plain tensor attribute the
                # framework's loader made under its target device: the linked project decides
                # (device_construction.py, module_state_parameters.py)
                receiver = func.value  # type: ignore[union-attr]
                # capture metadata the framework stores on the device (capture-device-attributes)
                on_device = ctx.on_capture_device(receiver) and ctx.known_device(node) != apis.HOST_DEVICE
                ctx.report(
                    self, node, fix=fixable, inherited_state=ctx.inherited_attribute(receiver),
                    built_state=ctx.built_attribute(receiver), receiver_parameter=ctx.incoming_parameter(receiver),
                    void_in_capture=empty == "capture" or on_device,
                    device_calls=ctx.device_calls(receiver, ctx.known_device(node) or ""),
                )
        elif method == "copy_":
            if node.args and (moved_host_factory(node, ctx) or _is_host_tensor(node.args[0].value, ctx)):
                ctx.report(self, node)
        elif method in apis.HOST_DEVICE_METHODS and (not node.args or method in ("cuda", "npu")):
            on_host = ctx.known_device(func.value) == apis.HOST_DEVICE  # type: ignore[union-attr]
            if on_host and method in ("cpu", "numpy"):
                return  # already on the host: nothing is copied
            if not _is_module_path(func, ctx):  # type: ignore[arg-type]
                # .cpu() of a tensor the value flow shows was made on the host (in another
                # function, passed or stored here) copies nothing either
                ctx.report(self, node, host_receiver=method in ("cpu", "numpy"))

    def apply_fix(self, node: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
        factory = node.func.value
        assert isinstance(factory, cst.Call)
        device = node.args[0]
        device_arg = cst.Arg(
            keyword=cst.Name("device"),
            value=device.value,
            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
        )
        args = list(factory.args)
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return factory.with_changes(args=[*args, device_arg], lpar=node.lpar, rpar=node.rpar)

    VALID = [
        snippet("""
            import torch

            def run(g, hidden_states):
                with torch.npu.graph(g):
                    output = torch.zeros_like(hidden_states).to(hidden_states.device)
                    output.add_(hidden_states)
        """),
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x, seq_len):
                mask = torch.arange(x.size(-1), device=x.device)
                mask = mask.repeat(x.size(0), 1) >= seq_len.unsqueeze(1)
                return x.masked_fill(mask.unsqueeze(1).type(torch.bool).to(device=x.device), 0.0)
        """),
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x):
                positions = torch.arange(x.shape[0], device=x.device)
                return x + positions.to(torch.float16)
        """),
        snippet("""
            import torch

            def prepare(batch, device):
                return batch.to(device)

            @torch.compile(mode="reduce-overhead")
            def step(x):
                return x.to(x.dtype) * 2
        """),
        snippet("""
            import torch

            def run(g, static_x):
                with torch.npu.graph(g):
                    none = torch.as_tensor([], device=static_x.device)
                    rows = torch.zeros(0, 4).to(static_x.device)
                    static_x.add_(rows.sum() + none.sum())
        """),
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x, y):
                x.copy_(y)
                return x
        """),
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x, lengths):
                host_lengths = torch.tensor(lengths, device="cpu")
                offsets = torch.zeros(4, device=x.device)
                return x + offsets.to(x.device), host_lengths.cpu().numpy()
        """),
        snippet("""
            import torch
            from torch import nn

            class Positions(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.table = nn.Embedding(64, 8)

                def forward(self, ids):
                    return self.table(ids)

            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.embed_positions = Positions()
                    self.conv = nn.Conv1d(8, 8, 3, padding=1)
                    self.register_buffer("inv_freq", torch.ones(4), persistent=False)

                def forward(self, x, ids):
                    pos = self.embed_positions(ids)
                    conv = self.conv(x).to(x.device)
                    freqs = self.inv_freq.to(device=x.device, dtype=torch.float)
                    return x + pos.to(x.device) + conv, freqs

            model = torch.compile(Encoder(), mode="reduce-overhead")
        """),
        snippet("""
            import torch
            from torch import nn

            def rope_forward(self, positions, query):
                # moved where it is kept, once (vllm-ascend's rotary embedding)
                if self.cos_sin_cache.device != query.device:
                    self.cos_sin_cache = self.cos_sin_cache.to(query.device)
                return query + self.cos_sin_cache[positions]

            class Rotary(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.cos_sin_cache = torch.ones(64, 8)

                def forward(self, positions, query):
                    return rope_forward(self, positions, query)

            model = torch.compile(Rotary(), mode="reduce-overhead")
        """),
    ]
    INVALID = [
        snippet("""
            import torch
            from torch import nn

            class Rotary(nn.Module):
                def forward(self, x):
                    pos = torch.arange(x.shape[1]).to(x.device)  # error
                    steps = torch.arange(x.shape[0])
                    steps = steps.to(x.device)  # error
                    return x + pos + steps[:, None]

            model = torch.compile(Rotary(), mode="reduce-overhead")
        """),
        snippet("""
            import torch

            def run(model, static_x, g):
                with torch.npu.graph(g):
                    out = model(static_x).cpu()  # error
                return out
        """),
        snippet("""
            import torch
            import torchair

            config = torchair.CompilerConfig()
            config.mode = "reduce-overhead"
            npu_backend = torchair.get_npu_backend(compiler_config=config)

            @torch.compile(backend=npu_backend)
            def step(x, cache):
                cache.copy_(torch.zeros(4))  # error
                bias = torch.tensor([1.0, 2.0], device=x.device)  # error
                return x.npu() + bias  # error
        """),
        snippet("""
            import torch

            @torch.compile(mode="reduce-overhead")
            def step(x):
                staged = torch.zeros(4, dtype=torch.int32, device="cpu", pin_memory=True)
                return x + staged.to(x.device, non_blocking=True)  # error
        """),
        snippet("""
            import torch
            from torch import nn

            class Cached(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.cache = torch.zeros(4)  # a plain attribute: model.to() does not move it
                    self.proj = nn.Linear(4, 4)

                def helper(self, n):
                    return torch.ones(n)

                def forward(self, x):
                    ones = self.helper(4).to(x.device)  # error
                    return self.proj(x) + self.cache.to(x.device) + ones  # error

            model = torch.compile(Cached(), mode="reduce-overhead")
        """),
        snippet("""
            import torch
            from torch import nn

            class Rotary(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.cos_sin_cache = torch.ones(64, 8)

                def forward(self, positions, query):
                    cache = self.cos_sin_cache
                    if cache.device != query.device:
                        moved = cache.to(query.device)  # error
                        return query + moved[positions]
                    return query + cache[positions]

            model = torch.compile(Rotary(), mode="reduce-overhead")
        """),
    ]


def _is_module_path(func: cst.Attribute, ctx: SiteContext) -> bool:
    """``torch.npu.current_device()``-style module functions are not tensor methods."""
    name = ctx.qualify(func)
    return name is not None and name.startswith(("torch.", "torch_npu."))


def _is_host_tensor(expr: cst.BaseExpression, ctx: SiteContext) -> bool:
    """``torch.from_numpy(a)`` or ``t.cpu()``: a tensor known to live on the host."""
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    return ctx.qualify(func) == "torch.from_numpy" or (isinstance(func, cst.Attribute) and func.attr.value == "cpu")
