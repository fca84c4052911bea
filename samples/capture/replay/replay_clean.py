# expect-check: none
# expect-trace: verdict=none
"""The replay-safe form of the other replay samples: the temperature is a tensor input, the
weights are updated in place, and requests are padded to two bucketed sizes, so a graph captured
once per bucket replays with the same result as eager at every call.
"""

import torch
from torch import nn

BUCKETS = (4, 8)


class Sampler(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, temperature: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.proj(x) / temperature, dim=-1)


@torch.compiler.disable  # weight sync runs eagerly, between the captured steps
def reload(model: Sampler, version: int) -> None:
    generator = torch.Generator().manual_seed(version)
    with torch.no_grad():
        model.proj.weight.copy_(torch.randn(8, 8, generator=generator))


def padded(x: torch.Tensor) -> torch.Tensor:
    size = next(b for b in BUCKETS if b >= x.shape[0])
    return torch.nn.functional.pad(x, (0, 0, 0, size - x.shape[0]))


def graphlint_target():
    torch.manual_seed(0)
    model = Sampler().eval()

    def step(x: torch.Tensor, temperature: torch.Tensor, version: int) -> torch.Tensor:
        reload(model, version)
        return model(x, temperature)

    requests = [torch.randn(n, 8) for n in (3, 4, 7, 2, 8)]
    temperatures = [1.0, 0.5, 0.7, 0.9, 1.2]
    return {
        "fn": step,
        "inputs": [(padded(x), torch.tensor(t), v) for v, (x, t) in enumerate(zip(requests, temperatures))],
    }
