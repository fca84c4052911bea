# A data-parallel evaluation step: every rank runs the same MLP on its own shard, all_reduce
# averages the loss over the ranks and all_gather_into_tensor collects the predictions. All ranks
# compile the same graph with the same collectives: nothing to report.
#   graphlint trace samples/distributed/clean_data_parallel.py --nproc 2 --stages eager,dynamo,aot
# graphlint starts the gloo process group (the target does not).
# expect-check: none
# expect-trace: verdict=none
import os

import torch
import torch.distributed as dist
from torch import nn

RANK = int(os.environ.get("RANK", "0"))  # torchrun's; the shard this rank evaluates


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def evaluation_step(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    prediction = model(x)
    loss = nn.functional.mse_loss(prediction, y)
    dist.all_reduce(loss)
    loss = loss / dist.get_world_size()
    gathered = prediction.new_empty((dist.get_world_size() * prediction.shape[0], prediction.shape[1]))
    dist.all_gather_into_tensor(gathered, prediction)
    return loss, gathered


torch.manual_seed(0)
model = MLP().eval()
shard = torch.Generator().manual_seed(RANK)


def graphlint_target():
    return evaluation_step, (torch.randn(8, 16, generator=shard), torch.randn(8, 4, generator=shard))
