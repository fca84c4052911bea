"""A feature encoder that turns gradients on for its own intermediate (the Hugging Face
wav2vec2-style encoders do it in training "for gradient checkpointing").

Under torch.compile, dynamo cannot change `requires_grad` of a tensor it is tracing: "setattr()
on Tensor.requires_grad" (GB0206) breaks the graph on every training call, and with
`fullgraph=True` the compile fails. `freeze` sets it on parameters outside the compiled forward.
Fix: set it on the input before the compiled call, or leave it to autograd.
"""
# expect-check: GL110@31
# expect-trace: verdict=dynamo GB0206@31
# torch 2.6 breaks at the same line ("STORE_ATTR-caused graph break", no code)
# expect-trace[torch 2.6]: verdict=dynamo

import torch
from torch import nn


class FeatureEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(1, 8, 10, stride=5)

    def freeze(self) -> None:
        for param in self.conv.parameters():
            param.requires_grad = False

    def forward(self, input_values: torch.Tensor) -> torch.Tensor:
        hidden = input_values[:, None]
        if self.training:
            # the intermediate's requires_grad: dynamo breaks the graph here
            hidden.requires_grad = True
        return self.conv(hidden)


encoder = torch.compile(FeatureEncoder())


def graphlint_target():
    torch.manual_seed(0)
    return {"fn": FeatureEncoder().train(), "inputs": [(torch.randn(2, 400),)]}
