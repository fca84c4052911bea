# A small MLP that every stage of the ladder handles: no breaks, no recompiles, outputs match.
# expect-check: none
# expect-trace: verdict=none
import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


torch.manual_seed(0)
model = MLP().eval()
example_inputs = (torch.randn(8, 16),)
