"""A decoder layer that counts its calls under a lock, for a metrics thread of the serving
process to read (host-side bookkeeping left in the forward).

Dynamo cannot trace `with self._stats_lock:` on a `threading.Lock`: "Unsupported context
manager" (GB0142). On torch 2.13 it then gives up on the whole forward, which runs eagerly on every
call (no graph at all); with `fullgraph=True` the compile fails.
Fix: count outside the compiled forward, or put the bookkeeping in a helper marked
`@torch.compiler.disable` (one deliberate break instead of a hidden one).
"""
# expect-check: GL109@31
# expect-trace: verdict=dynamo GB0142@31
# torch 2.6 skips the frame at the same line (a reason with no code)
# expect-trace[torch 2.6]: verdict=dynamo

import threading

import torch
from torch import nn


class CountedLayer(nn.Module):
    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.mlp = nn.Linear(hidden, hidden)
        self._stats_lock = threading.Lock()
        self.calls = 0

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states = self.mlp(hidden_states)
        # the host-side counter: dynamo breaks the graph here
        with self._stats_lock:
            self.calls += 1
        return hidden_states.relu()


layer = torch.compile(CountedLayer())


def graphlint_target():
    torch.manual_seed(0)
    return {"fn": CountedLayer().eval(), "inputs": [(torch.randn(3, 32),)]}
