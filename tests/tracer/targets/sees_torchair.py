# Test target: a custom op whose kernels note whether torchair is visible to the process when
# they run (the real kernel when the target runs, the fake one when a graph is traced), and whose
# fake kernel dies of SIGSEGV, or sleeps with GRAPHLINT_TEST_TORCHAIR_HANG, when it is traced
# while GRAPHLINT_TEST_TORCHAIR_CRASH is set and torchair is imported: a crash or hang of
# torchair's translation.
import ctypes
import os
import sys
import time

import torch
from torch import nn

SEEN: list[tuple[str, bool]] = []  # (kernel, torchair visible)


def _torchair_visible() -> bool:
    return "torchair" in sys.modules or "torch_npu" in sys.modules


@torch.library.custom_op("graphlint_test::scaled", mutates_args=())
def scaled(x: torch.Tensor) -> torch.Tensor:
    SEEN.append(("real", _torchair_visible()))
    return x * 2


@scaled.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    SEEN.append(("fake", _torchair_visible()))
    if _torchair_visible() and os.environ.get("GRAPHLINT_TEST_TORCHAIR_CRASH"):
        if os.environ.get("GRAPHLINT_TEST_TORCHAIR_HANG"):
            time.sleep(600)
        ctypes.string_at(0)
    return torch.empty_like(x)


class Scales(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return scaled(self.proj(x)) + 1


model = Scales()
example_inputs = (torch.ones(2, 8),)
