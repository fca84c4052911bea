"""What the three capture rules (GL201–GL203) share: severity by region, and the device checks."""

from __future__ import annotations

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.facts import RegionKind
from graphlint.checks.rules.base import Rule, Severity, SiteContext
from graphlint.checks.syntax import keyword, positional, string_value


class CaptureRule(Rule):
    """Errors inside a capture region; in a plain compiled region a graph break or slow path."""

    traced_only = False  # eager capture (torch.npu.graph) forbids them just the same

    def severity(self, region: RegionKind | None, fullgraph: bool = False) -> Severity:
        return "error" if region == "capture" else "warning"


def is_factory_without_device(call: cst.BaseExpression, ctx: SiteContext) -> bool:
    """``torch.arange(n)``: a factory that makes its tensor on the host without saying so (one
    made there on purpose, ``device="cpu"`` or ``pin_memory=True``, is host-side work). One that
    takes ``**kwargs`` may be handed its device there (sglang's ``torch.arange(a, b,
    **self.cuda_int32_kwargs)``)."""
    return (
        isinstance(call, cst.Call)
        and ctx.qualify(call.func) in apis.TENSOR_FACTORIES
        and ctx.known_device(call) is None
        and not any(arg.star == "**" for arg in call.args)
    )


def moves_to_device(call: cst.Call, ctx: SiteContext) -> bool:
    """``t.to(device)`` / ``t.to(x.device)`` / ``t.to("npu")`` — not a dtype-only ``.to``."""
    if keyword(call, "device") is not None:
        return True
    args = positional(call)
    if not args:
        return False
    target = args[0].value
    if isinstance(target, cst.Attribute):
        if target.attr.value == "device":
            return True
        if target.attr.value in apis.DTYPE_NAMES or target.attr.value == "dtype":
            return False
        return "device" in target.attr.value
    if isinstance(target, cst.Name):
        return "device" in target.value or target.value in ("dev", "npu", "cuda")
    if isinstance(target, cst.Call):
        return ctx.qualify(target.func) == "torch.device"
    text = string_value(target)
    return text is not None and text.split(":")[0] in ("npu", "cuda", "cpu")


def copies_nothing(call: cst.Call, ctx: SiteContext) -> bool:
    """``t.to(d)`` / ``t.cpu()`` of a tensor known to be on that device already."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return False
    source = ctx.known_device(func.value)
    if source is None:
        return False
    return ctx.known_device(call) == source


def moved_host_factory(call: cst.Call, ctx: SiteContext) -> cst.Call | None:
    """The host-made factory that ``call`` copies to the device, if it is one:
    ``torch.arange(n).to(x.device)`` or ``buf.copy_(torch.zeros(4))``."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return None
    if func.attr.value == "to" and moves_to_device(call, ctx):
        source = func.value
    elif func.attr.value == "copy_" and call.args:
        source = call.args[0].value
    else:
        return None
    return source if is_factory_without_device(source, ctx) else None  # type: ignore[return-value]
