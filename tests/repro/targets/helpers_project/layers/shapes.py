"""Helpers the model imports by name (``from .shapes import batch_tag``)."""

import torch


def _prefix() -> str:
    return "batch_"


def batch_tag(x: torch.Tensor) -> str:
    # str() of a size dynamo made dynamic: GB0059 once the batch size changes
    return _prefix() + str(x.shape[0])
