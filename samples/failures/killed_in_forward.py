# The worker is killed with SIGKILL in forward, as the kernel's out-of-memory killer does when a
# trace runs without --memory-limit: no Python code runs and no stacks are written, yet the
# stage is a `crash` finding that points to --memory-limit, and the report is complete.
# expect-trace: verdict=model
# expect-check: none
import os
import signal

import torch
from torch import nn


class KilledLikeByTheOomKiller(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        os.kill(os.getpid(), signal.SIGKILL)


def graphlint_target():
    return KilledLikeByTheOomKiller(), (torch.ones(4),)
