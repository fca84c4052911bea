# The file raises while it is imported (a missing configuration file): the target cannot be
# loaded, so `graphlint trace` exits 2, names the error on stderr and still writes the report,
# with a load-error finding (GT012, layer model) at the line that raised and every stage skipped.
# expect-trace: verdict=model GT012@11
# expect-check: none
import torch
from torch import nn


def read_config(path: str) -> dict:
    with open(path, encoding="utf-8") as stream:
        return {"width": int(stream.read())}


CONFIG = read_config("/nonexistent/graphlint/model.cfg")


def graphlint_target():
    return nn.Linear(CONFIG["width"], 2), (torch.ones(CONFIG["width"]),)
