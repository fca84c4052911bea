# Test target: forward never returns, so each stage hangs until --timeout; it also starts a
# child process, which must not outlive the trace.
import os
import subprocess
import sys
import time

import torch
from torch import nn


class Sleeps(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        if os.environ.get("GRAPHLINT_TEST_PID_FILE"):
            with open(os.environ["GRAPHLINT_TEST_PID_FILE"], "a") as pids:
                pids.write(f"{os.getpid()}\n{child.pid}\n")
        time.sleep(600)
        return x


model = Sleeps()
example_inputs = (torch.ones(2),)
