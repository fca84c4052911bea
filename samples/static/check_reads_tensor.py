"""A vision-language model merging image features into the text embeddings, checking first
that the prompt has as many image tokens as there are image features (the check transformers'
multimodal models make).

`torch._check_tensor_all` on a tensor condition reads it back to Python: under torch.compile
that is `.item()`, a graph break ("Unsupported Tensor.item() call", GB0124) on every call, and
under graph capture a device sync. Fix: validate the inputs before calling the compiled model, or
check shapes only (`torch._check(features.shape[0] == expected)` with a Python `expected`).
"""
# expect-check: GL108@29
# expect-trace: verdict=dynamo GB0124@29
# torch 2.6 breaks at the same line, on the lambda handed to the check (a reason with no code)
# expect-trace[torch 2.6]: verdict=dynamo

import torch
from torch import nn


class ImageTokenMerger(nn.Module):
    def __init__(self, hidden: int = 32, image_token_id: int = 7) -> None:
        super().__init__()
        self.projector = nn.Linear(hidden, hidden)
        self.image_token_id = image_token_id

    def forward(self, input_ids: torch.Tensor, embeds: torch.Tensor, image_features: torch.Tensor) -> torch.Tensor:
        image_mask = input_ids == self.image_token_id
        n_image_tokens = image_mask.sum()
        # the tensor check: dynamo breaks the graph here
        torch._check_tensor_all(
            n_image_tokens == image_features.shape[0], lambda: "image tokens and image features do not match"
        )
        features = self.projector(image_features)
        return embeds.masked_scatter(image_mask[..., None], features)


merger = torch.compile(ImageTokenMerger())


def graphlint_target():
    torch.manual_seed(0)
    prompt = torch.tensor([[1, 7, 7, 2]])
    return {"fn": ImageTokenMerger().eval(), "inputs": [(prompt, torch.randn(1, 4, 32), torch.randn(2, 32))]}
