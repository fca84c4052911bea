# expect-check: none
"""Entry point: torchair reduce-overhead (aclgraph capture) on the whole decoder."""

import torch
import torchair as tng

from .model import Decoder


def build(hidden: int = 16, depth: int = 2):
    config = tng.CompilerConfig()
    config.mode = "reduce-overhead"
    backend = tng.get_npu_backend(compiler_config=config)
    return torch.compile(Decoder(hidden, depth), backend=backend, dynamic=False)
