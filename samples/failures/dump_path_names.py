# Names from user code end up in --dump file names (depyf's decompiled code is named after the
# function's code object). This forward's code calls itself "../../../escaped_xxx…" (300 x):
# the dump sanitises and shortens each path part, so every file is written, inside --dump.
# expect-trace: verdict=none
# expect-check: none
import torch
from torch import nn


class Doubles(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


# A code object may carry any name (code generators and decorators rewrite them).
Doubles.forward.__code__ = Doubles.forward.__code__.replace(co_name="../../../escaped_" + "x" * 300)


def graphlint_target():
    return Doubles(), (torch.ones(4),)
