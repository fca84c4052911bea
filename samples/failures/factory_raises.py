# graphlint_target() itself raises (a checkpoint that is not there): the target cannot be
# loaded, so `graphlint trace` exits 2 with a message naming the error and prints no report.
# expect-trace: verdict=unloadable
# expect-check: none
import torch
from torch import nn


def graphlint_target():
    model = nn.Linear(4, 2)
    model.load_state_dict(torch.load("/nonexistent/graphlint/checkpoint.pt"))
    return model, (torch.ones(4),)
