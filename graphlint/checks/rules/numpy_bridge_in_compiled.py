from __future__ import annotations

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.rules.base import Rule, SiteContext, snippet


class NumpyBridgeInCompiled(Rule):
    """## What it does
    Flags `torch.from_numpy(...)`, `tensor.numpy()` and numpy array constructors
    (`np.array`, `np.asarray`, …) inside a compiled region. A numpy array made from a Python
    list, tuple or comprehension (or a name bound to one) is not flagged: no tensor crosses.

    ## Why is this bad?
    Dynamo records the dispatch keys of every tensor it guards on. A tensor made by
    `from_numpy` is a CPU tensor while tracing and may be an NPU tensor at replay, so the guard
    fails ("Guard check failed", yolov5 on Ascend), or the bridge becomes a graph break and a
    host round trip (layer: dynamo).

    ## Example
    ```python
    @torch.compile
    def postprocess(pred):
        boxes = torch.from_numpy(np.asarray(pred))
        ...
    ```

    ## Use instead
    Keep numpy outside the compiled function: convert inputs before calling it, and use torch
    ops inside.

    ## Fix safety
    No automatic fix.

    ## References
    torchair#451
    """

    code = "GL104"
    slug = "numpy-bridge-in-compiled"
    summary = "torch.from_numpy / .numpy() / np.array inside a compiled region"
    message = "numpy bridge inside a compiled region: guard failures (dispatch keys differ) or a graph break"
    default_severity = "warning"
    refs = ("torchair#451",)

    def visit_Call(self, node: cst.Call, ctx: SiteContext) -> None:
        func = node.func
        if node.args and node.args[0].keyword is None and ctx.is_python_container(node.args[0].value):
            return  # np.array([1, 2]) of Python values: numpy alone, no tensor crosses (dynamo traces it)
        if ctx.qualify(func) in apis.NUMPY_BRIDGE_FUNCTIONS or (
            isinstance(func, cst.Attribute) and func.attr.value in apis.NUMPY_BRIDGE_METHODS and not node.args
        ):
            ctx.report(self, node)

    VALID = [
        snippet("""
            import numpy as np
            import torch

            def load(path):
                return torch.from_numpy(np.load(path))
        """),
        snippet("""
            import torch

            @torch.compile
            def step(x):
                return torch.as_tensor(x) * 2
        """),
        snippet("""
            import numpy as np
            import torch

            @torch.compile
            def step(x):
                return x * float(np.pi)
        """),
        snippet("""
            import numpy as np
            import torch

            @torch.compile
            def step(x, n: int):
                blocks = []
                for i in range(n):
                    blocks.append(i)
                plan = np.array(blocks, dtype=np.int32)
                return x * len(plan) + len(np.asarray([i * 2 for i in range(n)]))
        """),
        snippet("""
            import numpy as np
            import torch

            @torch.compile
            def step(x, n: int):
                # the name is rebound to the array it is made into (SpecAugment's shape): the
                # call reads the list
                idxs = [i * 2 for i in range(n)]
                idxs = np.array(idxs)
                return x * len(idxs)
        """),
    ]
    INVALID = [
        snippet("""
            import numpy as np
            import torch

            @torch.compile
            def preprocess(img):
                return torch.from_numpy(img).float()  # error
        """),
        snippet("""
            import numpy
            import torch
            from torch import nn

            class Head(nn.Module):
                def forward(self, x):
                    scores = x.softmax(-1).numpy()  # error
                    return numpy.asarray(scores)  # error

            head = torch.compile(Head())
        """),
        snippet("""
            from numpy import asarray
            import torch

            def to_host(t):
                return asarray(t)  # error

            @torch.compile
            def step(x):
                return to_host(x)
        """),
    ]
