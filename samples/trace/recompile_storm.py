# A recompile storm (pytorch#1497): the number of refinement steps is a Python int that
# changes every call; the loop needs its exact value, so every new value fails a guard and recompiles,
# until recompile_limit (8) is hit and it runs eagerly. Fix: torch._dynamo.config.recompile_limit = 16
# expect-trace: verdict=dynamo GB0039@16
# expect-check: none
import torch
from torch import nn


class Refiner(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.step = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, steps: int) -> torch.Tensor:
        for _ in range(steps):
            x = x + 0.1 * torch.tanh(self.step(x))
        return x


def graphlint_target():
    torch.manual_seed(0)
    refiner = Refiner().eval()
    x = torch.randn(2, 8)
    return {"fn": refiner, "inputs": [(x, steps) for steps in range(1, 11)]}

