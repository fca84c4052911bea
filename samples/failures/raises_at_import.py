# The file raises while it is imported (a missing configuration file): the target cannot be
# loaded, so `graphlint trace` exits 2 with a message naming the error and prints no report.
# expect-trace: verdict=unloadable
# expect-check: none
import torch
from torch import nn


def read_config(path: str) -> dict:
    with open(path, encoding="utf-8") as stream:
        return {"width": int(stream.read())}


CONFIG = read_config("/nonexistent/graphlint/model.cfg")


def graphlint_target():
    return nn.Linear(CONFIG["width"], 2), (torch.ones(CONFIG["width"]),)
