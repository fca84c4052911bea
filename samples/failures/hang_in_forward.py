# forward never returns, and it starts a helper process first: graphlint stops the stage after
# --timeout, reports a `hang` at the line that was running (from the Python stacks it dumps),
# and leaves no process behind, the helper included.
# expect-trace: verdict=model GT006@19
# expect-check: none
import subprocess
import sys
import time

import torch
from torch import nn


class WaitsForever(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # A stand-in for a data-loader worker or a server the model talks to.
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        while True:
            time.sleep(0.1)


def graphlint_target():
    return WaitsForever(), (torch.ones(4),)
