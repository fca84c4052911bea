# graphlint_target() returns the model alone instead of (fn, args): the target cannot be
# loaded, so `graphlint trace` exits 2 with a message that says what to return, and writes the
# report with a load-error finding (GT012) at the factory's def line, every stage skipped.
# expect-trace: verdict=model GT012@10
# expect-check: none
import torch
from torch import nn


def graphlint_target():
    return nn.Linear(4, 2)
