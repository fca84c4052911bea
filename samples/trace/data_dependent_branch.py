# Python control flow on a tensor's value: dynamo cannot trace the branch and breaks the graph.
# expect-trace: verdict=dynamo GB0170@19
# expect-check: none
import torch
from torch import nn


class ClampIfLarge(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        # The branch depends on the data: dynamo must stop the graph here, run the
        # comparison eagerly, and start a new graph for the branch taken. Branch-free:
        # y = torch.where(y.abs().amax() > 10, y.clamp(-10, 10), y)
        too_large = y.abs().amax() > 10
        if too_large:
            y = y.clamp(-10, 10)
        return torch.tanh(y)


torch.manual_seed(0)
model = ClampIfLarge().eval()
example_inputs = [(torch.randn(4, 8),), (torch.randn(4, 8) * 100,)]
