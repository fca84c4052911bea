from __future__ import annotations

import libcst as cst

from graphlint.checks import dynamo
from graphlint.checks.rules._break import BreakRule
from graphlint.checks.rules.base import SiteContext, snippet


class LoggingInCompiled(BreakRule):
    """## What it does
    Flags logging, warnings and `print` inside a compiled region: methods of a logger
    (`logger.warning(...)`, `logger.debug(...)`, `logger.isEnabledFor(...)`, transformers'
    `logger.warning_once(...)`), the `logging` module's functions (`logging.info(...)`),
    `warnings.warn(...)` and `print(...)`. A logger is a name bound to `logging.getLogger(...)`
    or transformers' `logging.get_logger(...)` under any import, or a name such as `logger`.
    Not in a block that always ends by raising (`logger.error(msg); raise ValueError(msg)`):
    dynamo traces the passing path, which never runs it.

    ## Why is this bad?
    Dynamo does not trace them (torch 2.13): a `logging.Logger` method is "not supported for
    non-export cases" (GB0291), `warning_once` takes an `lru_cache` lock (GB0142),
    `warnings.warn` is a skipped builtin (GB0007), `print` an untraceable builtin (GB0059).
    Each splits the graph in two, every call, even when the message is never printed; with
    `fullgraph=True` the compile fails (layer: dynamo).

    ## Example
    ```python
    def forward(self, x):
        if x.shape[-1] > self.max_len:
            logger.warning_once("input longer than max_len")
        return self.proj(x)
    ```

    ## Use instead
    Warn before compiling, or keep it in eager code:
    `if not torch.compiler.is_compiling(): logger.warning_once(...)`.

    ## Fix safety
    No automatic fix.

    ## References
    torchair#212 (dynamo "Unsupported" on transformers code: keep it out of the compiled
    forward, check with `aot_eager` first); torch 2.13 graph-break registry GB0291, GB0142, GB0007, GB0059; the Hugging Face graph-break
    corpus (penguinwu/oss-model-graph-break-corpus)
    """

    code = "GL106"
    slug = "logging-in-compiled"
    summary = "logging, warnings.warn or print inside a compiled region (a graph break)"
    message = "logging call in compiled code: dynamo breaks the graph here"
    refs = ("torchair#212",)
    predicts = ("GB0291", "GB0142", "GB0007", "GB0059", "GB4841")

    def visit_Call(self, node: cst.Call, ctx: SiteContext) -> None:
        if ctx.in_error_message:
            return  # logged on the way to a raise: dynamo traces the passing path, not this one
        name = ctx.qualify(node.func)
        codes = dynamo.logging_function(name)
        if codes is not None:
            ctx.report(self, node, f"{name}() in compiled code: dynamo breaks the graph here", predicts=codes)
            return
        func = node.func
        if not isinstance(func, cst.Attribute) or not self._is_logger(func.value, ctx):
            return
        table = dynamo.logging_table()
        method = func.attr.value
        if method in table["methods"]:
            codes = tuple(table["method_gb"])
        elif method in table["once_methods"]:
            codes = tuple(table["once_gb"])
        else:
            return
        ctx.report(self, node, f"logger.{method}() in compiled code: dynamo breaks the graph here", predicts=codes)

    def _is_logger(self, receiver: cst.BaseExpression, ctx: SiteContext) -> bool:
        if isinstance(receiver, cst.Call):  # logging.getLogger(__name__).warning(...)
            return dynamo.is_logger_factory(ctx.qualify(receiver.func))
        maker = ctx.made_by(receiver)
        if maker is not None:
            return dynamo.is_logger_factory(maker)
        name = receiver.value if isinstance(receiver, cst.Name) else None
        if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value == "self":
            name = receiver.attr.value
        return name in dynamo.logging_table()["names"] and ctx.qualify(receiver) not in ("logging", "math", "torch")

    VALID = [
        snippet("""
            import logging
            import torch

            logger = logging.getLogger(__name__)

            def load(path):
                logger.info("loading %s", path)
                print(path)

            @torch.compile
            def step(x):
                if not torch.compiler.is_compiling():
                    logger.warning("eager only")
                return torch.log(x).sum()
        """),
        snippet("""
            import math
            import torch
            from torch import nn

            class Head(nn.Module):
                def log(self, x):
                    return x

                def forward(self, x):
                    log = torch.log(x)
                    return self.log(log.exp()) * math.log(2.0)

            model = torch.compile(Head())
        """),
        snippet("""
            import logging
            import torch

            logger = logging.getLogger(__name__)

            @torch.compiler.disable
            def report(x):
                logger.info("mean %s", x.mean())

            @torch.compile
            def step(x):
                report(x)
                return x + 1
        """),
        snippet("""
            import logging
            import torch

            logger = logging.getLogger(__name__)

            @torch.compile
            def apply(x, left):
                if left.shape[0] * left.shape[1] != x.shape[-1]:
                    err_msg = f"transform {left.shape} does not match {x.shape[-1]}"
                    logger.error(err_msg)
                    raise ValueError(err_msg)
                return x @ left.flatten()
        """),
    ]
    INVALID = [
        snippet("""
            import logging
            import torch

            logger = logging.getLogger(__name__)

            @torch.compile
            def apply(x, left):
                if left.shape[0] != x.shape[-1]:
                    logger.warning("falling back")  # error
                    if x.dim() > 2:
                        return x
                    raise ValueError("no fallback")
                return x @ left
        """),
        snippet("""
            import logging as lg
            import warnings
            import torch

            log_ = lg.getLogger(__name__)

            @torch.compile
            def step(x):
                log_.debug("step")  # error
                warnings.warn("slow path")  # error
                print(x.shape)  # error
                lg.info("done")  # error
                return x * 2
        """),
        snippet("""
            import torch
            from torch import nn
            from transformers.utils import logging

            logger = logging.get_logger(__name__)

            class Block(nn.Module):
                def forward(self, x):
                    if x.shape[-1] > 512:
                        logger.warning_once("long input")  # error
                    return x

            model = torch.compile(Block(), fullgraph=True)
        """),
        snippet("""
            import logging
            import torch
            from torch import nn

            class Decoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.logger = logging.getLogger("decoder")

                def forward(self, x):
                    self.logger.isEnabledFor(logging.DEBUG)  # error
                    return x

            model = torch.compile(Decoder(), mode="reduce-overhead")
        """),
    ]
