# forward allocates until memory runs out. Run it with a memory limit, as the tests do:
#     graphlint trace samples/failures/oom_in_forward.py --memory-limit 3
# The limit (RLIMIT_AS in the worker) makes the allocation fail inside the worker instead of
# the machine's out-of-memory killer choosing a victim; graphlint reports `oom` at this line.
# expect-trace: verdict=model GT010@20
# expect-check: none
import torch
from torch import nn

CHUNK = 1 << 26  # floats: 256 MiB per chunk
MAX_CHUNKS = 512  # 128 GiB: never reached under a limit, and the loop still ends without one


class KeepsEverything(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # A cache that is never cleared, the usual way models run out of memory.
        kept = []
        for _ in range(MAX_CHUNKS):
            # ones(), not empty(): the pages are touched, so the memory is really used.
            kept.append(torch.ones(CHUNK))
        return x + len(kept)


def graphlint_target():
    return KeepsEverything(), (torch.ones(4),)
