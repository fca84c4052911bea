# A debugging print left in for one rank: `.item()` on rank 1 only breaks the graph there, so
# rank 1 compiles two graphs and issues its all_reduce from the second while rank 0 issues it
# from its only graph. With a backend that orders collectives per graph (torchair/GE on HCCL)
# such ranks stop matching and the job hangs; graphlint names rank 1 and the line.
#   graphlint trace samples/distributed/rank_divergent.py --nproc 2 --stages eager,dynamo,aot
# graphlint starts the gloo process group (the target does not).
# expect-check: none
# expect-trace: verdict=distributed GD002@30 GD001@28
# expect-ranks: GD002=1 GD001=1
import torch
import torch.distributed as dist
from torch import nn


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.proj(x))


def step(x: torch.Tensor) -> torch.Tensor:
    hidden = block(x)
    if dist.get_rank() == 1:
        # leftover debugging on one rank: .item() is a graph break
        print(f"rank 1 mean activation {hidden.mean().item():.4f}")
    hidden = hidden * 2
    dist.all_reduce(hidden)
    return hidden.sum(dim=-1)


torch.manual_seed(0)
block = Block().eval()


def graphlint_target():
    return step, (torch.randn(4, 16),)
