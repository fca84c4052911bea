# forward writes megabytes to stdout and stderr (debug prints left in a loop): the target's
# output goes to the worker's log, never into graphlint's report; `--format json` still
# prints one JSON object and every stage passes.
# expect-trace: verdict=none
# expect-check: none
import sys

import torch
from torch import nn

LINES = 40_000  # ~4 MiB to each stream per call


class Chatty(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i in range(LINES):
            print(f"step {i}: still here, padding the log with a long line of debug text ......")
            print(f"step {i}: warning text on stderr, just as long ...........................", file=sys.stderr)
        return x * 2


def graphlint_target():
    return Chatty(), (torch.ones(4),)
