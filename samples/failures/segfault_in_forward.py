# A native crash in forward (a null pointer read, as a broken extension would do): the worker
# dies of SIGSEGV; graphlint reports a `crash` at this line and still writes the whole report.
# expect-trace: verdict=model GT005@15
# expect-check: none
import ctypes

import torch
from torch import nn


class ReadsNullPointer(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        # string_at(0) dereferences address 0: SIGSEGV, no Python exception to catch.
        ctypes.string_at(0)
        return y


def graphlint_target():
    return ReadsNullPointer(), (torch.ones(4),)
