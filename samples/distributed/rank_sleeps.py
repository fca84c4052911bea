# Rank 1 stalls before its collective (a slow data loader, a stuck file system, a device still
# initialising as in pytorch#1415) while rank 0 already waits in all_reduce. Every rank ends
# with the same timeout; graphlint names rank 1, the line where it stopped progressing, and the
# line where the others wait. Give a short per-stage timeout:
#   graphlint trace samples/distributed/rank_sleeps.py --nproc 2 --stages eager,dynamo,aot --timeout 10
# GRAPHLINT_SAMPLE_STALL_SECONDS sets how long rank 1 stalls (default: an hour).
# graphlint starts the gloo process group (the target does not).
# expect-check: none
# expect-trace: verdict=distributed GD005@25
# expect-ranks: GD005=1
import os
import time

import torch
import torch.distributed as dist

STALL_SECONDS = float(os.environ.get("GRAPHLINT_SAMPLE_STALL_SECONDS", "3600"))

weight = torch.randn(16, 16, generator=torch.Generator().manual_seed(0))


def step(x: torch.Tensor) -> torch.Tensor:
    hidden = x @ weight
    if dist.get_rank() == 1:
        time.sleep(STALL_SECONDS)
    dist.all_reduce(hidden)
    return hidden


def graphlint_target():
    return step, (torch.randn(4, 16),)
