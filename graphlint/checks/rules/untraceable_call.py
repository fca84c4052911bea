from __future__ import annotations

import libcst as cst

from graphlint.checks import dynamo
from graphlint.checks.rules._break import BreakRule
from graphlint.checks.rules.base import SiteContext, snippet
from graphlint.checks.syntax import positional


class UntraceableCall(BreakRule):
    """## What it does
    Flags Python that dynamo cannot trace, inside a compiled region, from a table of what torch
    2.13 refuses (`graphlint/checks/dynamo.toml`): context managers (`with self._lock:` on a
    `threading.Lock`/`RLock`/`Condition`, `with open(...)`, `contextlib.redirect_stdout`),
    `ContextVar.get()` / `.set()`, clock reads (`time.time()`, `time.perf_counter()`,
    `datetime.now()`), frame introspection (`inspect.stack()`, `inspect.currentframe()`,
    `sys._getframe()`), `copy.deepcopy` of a tensor or module, `os.getpid()`, `uuid.uuid4()`,
    `random.random()`, and calling a recurrent module (`self.lstm(x)` where `self.lstm =
    nn.LSTM(...)`). What dynamo does trace is not flagged: `id()`, `hash()`,
    `os.environ.get`, `inspect.signature`, `copy.deepcopy` of a literal or of a config object (`self.config`),
    `contextlib.nullcontext`, and an exception raised and caught inside the compiled code.

    ## Why is this bad?
    Dynamo stops at each: "Unsupported context manager" (GB0142), "Attempted to call function
    marked as skipped" (GB0007), "Unsupported method call" (GB0156), "Failed to trace builtin
    operator" (GB0059), "Attempted to copy.deepcopy a tensor" (GB4198), "Attempted to wrap RNN,
    GRU, or LSTM" (GB0014; where the compiled forward calls the RNN itself, dynamo runs that whole
    frame eagerly instead). The graph splits there
    on every call; with `fullgraph=True` the compile fails (layer: dynamo).

    ## Example
    ```python
    def forward(self, x):
        with self._stats_lock:
            self.calls += 1
        return self.proj(x)
    ```

    ## Use instead
    Do the host-side bookkeeping outside the compiled function, or mark the helper that does it
    `@torch.compiler.disable` (one deliberate break instead of a hidden one).

    ## Fix safety
    No automatic fix.

    ## References
    torchair#212 (dynamo "Unsupported" on transformers code: keep it out of the compiled
    forward, check with `aot_eager` first); torch 2.13 graph-break registry GB0142, GB0007, GB0156, GB0059, GB4198; the Hugging Face
    graph-break corpus (penguinwu/oss-model-graph-break-corpus)
    """

    code = "GL109"
    slug = "untraceable-call"
    summary = "locks, ContextVars, clocks, frame introspection, deepcopy… that dynamo cannot trace, in a compiled region"
    message = "dynamo cannot trace this: it breaks the graph here"
    refs = ("torchair#212",)
    predicts = ("GB0142", "GB0007", "GB0156", "GB0059", "GB4198", "GB0014")

    def visit_Call(self, node: cst.Call, ctx: SiteContext) -> None:
        name = ctx.qualify(node.func)
        entry = dynamo.untraceable_call(name)
        if entry is not None:
            args = positional(node)
            if entry.get("skip_literals") and args and _is_literal(args[0].value):
                return
            plain = tuple(entry.get("skip_names_ending", ()))
            if plain and args and _last_name(args[0].value).endswith(plain):
                return  # copy.deepcopy(self.config): a plain object, traced
            self._report(node, ctx, entry, f"{name}()")
            return
        func = node.func
        entry = dynamo.untraceable_object_call(ctx.made_by(func))
        if entry is not None:
            self._report(node, ctx, entry, "calling it")
            return
        if isinstance(func, cst.Attribute):
            entry = dynamo.untraceable_method(ctx.made_by(func.value), func.attr.value)
            if entry is not None:
                self._report(node, ctx, entry, f".{func.attr.value}()")

    def visit_WithItem(self, node: cst.WithItem, ctx: SiteContext) -> None:
        item = node.item
        called = ctx.qualify(item.func) if isinstance(item, cst.Call) else None
        if called is not None and dynamo.untraceable_call(called) is not None:
            return  # the call itself is reported (open(...), redirect_stdout(...))
        entry = dynamo.untraceable_enter(called, ctx.made_by(item))
        if entry is not None:
            self._report(node, ctx, entry, "entering it")

    def _report(self, node: cst.CSTNode, ctx: SiteContext, entry: dict, what: str) -> None:
        ctx.report(self, node, f"{entry['what']} ({what}): dynamo cannot trace it, the graph breaks here", predicts=tuple(entry["gb"]))

    VALID = [
        snippet("""
            import contextlib
            import copy
            import os
            import torch

            @torch.compile
            def step(x, options):
                opts = copy.deepcopy({"scale": 2})
                cache_config = copy.deepcopy(options.config)
                with contextlib.nullcontext():
                    y = x * opts["scale"]
                if os.environ.get("DEBUG_STEP"):
                    y = y + id(options) % 2
                return y
        """),
        snippet("""
            import threading
            import time
            import torch

            _lock = threading.Lock()

            def timed(fn, x):
                start = time.perf_counter()
                with _lock:
                    out = fn(x)
                return out, time.perf_counter() - start

            step = torch.compile(lambda x: x * 2)
        """),
        snippet("""
            import torch
            from torch import nn

            class Tagger(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lstm = nn.LSTM(4, 4)
                    self.head = nn.Linear(4, 2)

                def encode(self, x):
                    return self.lstm(x)[0]

                def forward(self, features):
                    return self.head(features)

            model = torch.compile(Tagger())
        """),
        snippet("""
            import torch

            def helper(x):
                raise ValueError("bad")

            @torch.compile
            def step(x):
                try:
                    helper(x)
                except ValueError:
                    x = x + 1
                return x
        """),
    ]
    INVALID = [
        snippet("""
            import threading
            import torch
            from torch import nn

            class Counter(nn.Module):
                def __init__(self):
                    super().__init__()
                    self._lock = threading.RLock()
                    self.calls = 0

                def forward(self, x):
                    with self._lock:  # error
                        self.calls += 1
                    return x

            model = torch.compile(Counter(), fullgraph=True)
        """),
        snippet("""
            import contextvars
            import time
            import torch

            current_step = contextvars.ContextVar("current_step", default=0)

            @torch.compile
            def step(x):
                start = time.perf_counter()  # error
                offset = current_step.get()  # error
                return x + offset
        """),
        snippet("""
            import copy
            import inspect
            import torch
            from torch import nn

            class Ema(nn.Module):
                def __init__(self, inner):
                    super().__init__()
                    self.inner = inner

                def forward(self, x):
                    frame = inspect.currentframe()  # error
                    shadow = copy.deepcopy(self.inner)  # error
                    return shadow(x)

            model = torch.compile(Ema(nn.Linear(2, 2)))
        """),
        snippet("""
            import torch
            from torch import nn

            class Recurrent(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lstm = nn.LSTM(4, 4)

                def forward(self, x):
                    return self.lstm(x)[0] + x  # error

            class Codec(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)
                    self.recurrent = Recurrent()

                def forward(self, x):
                    return self.recurrent(self.proj(x))

            model = torch.compile(Codec())
        """),
    ]


def _last_name(expr: cst.BaseExpression) -> str:
    """``self.config`` → ``config``; ``cfg`` → ``cfg``; anything else → ``""``."""
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return expr.value if isinstance(expr, cst.Name) else ""


def _is_literal(expr: cst.BaseExpression) -> bool:
    """A list, tuple, dict or set display (of anything) or a constant: deepcopy traces it."""
    return isinstance(expr, (cst.List, cst.Tuple, cst.Dict, cst.Set, cst.Integer, cst.Float, cst.SimpleString))
