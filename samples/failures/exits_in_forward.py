# forward calls sys.exit (a library that "handles" an error by exiting): graphlint reports the
# exit as a `target-exit` finding (GT011) at this line instead of losing the stage.
# expect-trace: verdict=model GT011@14
# expect-check: none
import sys

import torch
from torch import nn


class GivesUp(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            sys.exit(3)
        return x


def graphlint_target():
    return GivesUp(), (torch.ones(4),)
