"""A model whose first call changes it, in the shape transformers does: output hooks installed
once under a lock (a dynamo graph break on a fresh model), and a config field filled in (as
Reformer's first call sets ``config.num_buckets``)."""

import threading
import types

import torch

_INSTALL = threading.Lock()


class InstallsHooksOnce(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.proj = torch.nn.Linear(8, 8)
        self.config = types.SimpleNamespace(num_buckets=None)
        self.hooks_installed = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.hooks_installed:
            with _INSTALL:
                self.proj.register_forward_hook(lambda module, args, output: None)
                self.hooks_installed = True
        if self.config.num_buckets is None:
            self.config.num_buckets = 4
        return self.proj(x).relu()


model = InstallsHooksOnce()
example_inputs = (torch.randn(2, 8),)
