# expect-check: GL201@22 GL201@23
# expect-trace: verdict=capture GL201@22 GL201@23
"""Statistics taken to the host and sent back, inside a function compiled for graph capture.

Eager, dynamo and AOTAutograd are all fine (on the CPU the two copies are no-ops), so only the
capture stage fails: on a device `.cpu()` is a device→host copy and `.to(h.device)` a host→device
copy, both forbidden in a captured stream ("Not allow to sync captured-stream", torchair#236).
The audit sees them because it traces with the tensors on a stand-in device.
Fix: keep the statistics on the device (`h - h.mean(dim=0)`).
"""

import torch
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))


def centred_features(x: torch.Tensor) -> torch.Tensor:
    h = encoder(x)
    # per-feature means, moved to the host "for logging" and back
    means = h.mean(dim=0).cpu()
    return h - means.to(h.device)


def graphlint_target():
    return centred_features, (torch.randn(4, 8),)


if __name__ == "__main__":
    step = torch.compile(centred_features, mode="reduce-overhead")
    print(step(torch.randn(4, 8)).shape)
