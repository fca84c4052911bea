# Rank 1's process is killed (SIGKILL, as the kernel's OOM killer does) a moment before its
# collective; rank 0 waits in all_reduce until graphlint stops it.
import os
import signal
import time

import torch
import torch.distributed as dist


def step(x: torch.Tensor) -> torch.Tensor:
    if dist.get_rank() == 1:
        time.sleep(1.0)  # busy with something when it is killed
        os.kill(os.getpid(), signal.SIGKILL)
    dist.all_reduce(x)
    return x


def graphlint_target():
    return step, (torch.ones(4),)
