# graphlint_target() returns the model alone instead of (fn, args): the target cannot be
# loaded, so `graphlint trace` exits 2 with a message that says what to return.
# expect-trace: verdict=unloadable
# expect-check: none
import torch
from torch import nn


def graphlint_target():
    return nn.Linear(4, 2)
