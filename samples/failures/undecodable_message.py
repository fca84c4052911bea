# The exception message holds bytes that are not UTF-8: a file name from a Latin-1 file system,
# which Python decodes with surrogateescape (os.fsdecode, os.listdir). No writer can encode
# such a string; graphlint spells the byte out (\udce9) so the report is still written.
# expect-trace: verdict=model GT001@17
# expect-check: none
import os

import torch
from torch import nn

DATA_FILE = os.fsdecode(b"donn\xe9es.bin")  # "données" in Latin-1


class ReadsData(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # the message carries the undecodable byte as the surrogate "\udce9"
        raise FileNotFoundError(f"no such file: {DATA_FILE}")


def graphlint_target():
    return ReadsData(), (torch.ones(4),)
