"""torchair#310 / pytorch#1497: a helper carries its own @torch.compile inside a model that a
graph runner captures as it runs.

Nothing inlines the helper there (dynamo inlines it only where it traces the caller): it compiles
on its own inside the capture, recompiles when its guards fail (dynamic=True hit the recompile
limit in pytorch#1497), and its graph is replayed inside the captured one ("Cannot prepare for
replay" on Ascend, torchair#310). Fix: drop the helper's decorator, or compile the model and
capture the compiled model.
"""
# expect-check: GL101@22
# expect-region: GL101@22 capture nested_compile.py:47 NpuGraphRunner.capture>Qwen2MoeBlock.forward>token_drop

import torch
from torch import nn


class Router(nn.Module):
    def forward(self, hidden):
        return hidden.softmax(-1)


@torch.compile(dynamic=True)
def token_drop(scores, capacity: int):
    top = scores.topk(capacity, dim=0).indices
    return scores.index_select(0, top.flatten())


class Qwen2MoeBlock(nn.Module):
    def __init__(self, hidden: int, capacity: int):
        super().__init__()
        self.router = Router()
        self.proj = nn.Linear(hidden, hidden)
        self.capacity = capacity

    def forward(self, hidden):
        scores = self.router(hidden)
        kept = token_drop(scores, self.capacity)
        return self.proj(kept)


class NpuGraphRunner:
    def __init__(self, model: nn.Module):
        self.model = model
        self.graph = torch.npu.NPUGraph()

    def capture(self, hidden):
        with torch.npu.graph(self.graph):
            return self.model(hidden)


def graphlint_target():
    block = Qwen2MoeBlock(16, 4)
    return block, (torch.randn(8, 16),)


if __name__ == "__main__":
    runner = NpuGraphRunner(Qwen2MoeBlock(16, 4))
    print(runner.capture(torch.randn(8, 16)).shape)
