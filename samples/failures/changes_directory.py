# The target changes the working directory while it is imported and built, as scripts that cd
# into their data folder do: graphlint's own paths do not depend on it, so the stages run, the
# report names the right files, and nothing is written where the target moved to.
# expect-trace: verdict=none
# expect-check: none
import os
import tempfile

import torch
from torch import nn

os.chdir(tempfile.gettempdir())


class Doubles(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


def graphlint_target():
    os.chdir("/")
    return Doubles(), (torch.ones(4),)
