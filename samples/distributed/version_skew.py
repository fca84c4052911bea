# One node of the job runs another torch and another HCCL setting than the rest: the first thing
# to rule out when HCCL fails or hangs (MindSpeed-LLM#1187, #1257). Here rank 1 simulates such a
# node: it sets torch.__version__ to GRAPHLINT_SAMPLE_RANK1_TORCH (default 2.12.1) — graphlint
# reports the version of the torch each rank actually imported — and HCCL_CONNECT_TIMEOUT.
#   graphlint trace samples/distributed/version_skew.py --nproc 2 --stages eager,dynamo,aot
# graphlint starts the gloo process group (the target does not).
# expect-check: none
# expect-trace: verdict=distributed
# expect-ranks: GD003=1 GD004=1
import os

import torch
import torch.distributed as dist

if os.environ.get("RANK") == "1":  # torchrun's rank, known before the process group starts
    torch.__version__ = os.environ.get("GRAPHLINT_SAMPLE_RANK1_TORCH", "2.12.1")
    os.environ["HCCL_CONNECT_TIMEOUT"] = "600"


def step(x: torch.Tensor) -> torch.Tensor:
    total = x.sum(dim=0)
    dist.all_reduce(total)
    return total / dist.get_world_size()


def graphlint_target():
    return step, (torch.ones(4, 8),)
