# The model starts a (non-daemon) thread that never ends when it is built, as a metrics
# reporter or prefetcher would: the stages still run and finish, the report is complete, and
# the thread keeps neither the worker nor the trace alive.
# expect-trace: verdict=none
# expect-check: none
import threading
import time

import torch
from torch import nn


def report_forever() -> None:
    while True:
        time.sleep(0.05)


class WithReporter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        threading.Thread(target=report_forever, name="metrics-reporter").start()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


def graphlint_target():
    return WithReporter(), (torch.ones(4),)
