# Test target: forward dereferences a null pointer, so the worker dies of SIGSEGV.
import ctypes
import os

import torch
from torch import nn


class Crashes(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if os.environ.get("GRAPHLINT_TEST_PID_FILE"):
            with open(os.environ["GRAPHLINT_TEST_PID_FILE"], "a") as pids:
                pids.write(f"{os.getpid()}\n")
        ctypes.string_at(0)
        return x


model = Crashes()
example_inputs = (torch.ones(2),)
