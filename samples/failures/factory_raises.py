# graphlint_target() itself raises (a checkpoint that is not there): the target cannot be
# loaded, so `graphlint trace` exits 2, names the error on stderr and still writes the report,
# with a load-error finding (GT012, layer model) at the line that raised and every stage skipped.
# expect-trace: verdict=model GT012@12
# expect-check: none
import torch
from torch import nn


def graphlint_target():
    model = nn.Linear(4, 2)
    model.load_state_dict(torch.load("/nonexistent/graphlint/checkpoint.pt"))
    return model, (torch.ones(4),)
