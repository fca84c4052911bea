"""The graph-break rules (GL106–GL110): severity by region, and the GB codes each finding
predicts in ``check --format json``."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.checks.conftest import lint_project

MODEL = """
import logging
import threading
import torch
from torch import nn

logger = logging.getLogger(__name__)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self._lock = threading.Lock()

    def forward(self, x, mask):
        logger.warning("step")
        n = int(mask.sum())
        torch._check_tensor_all(x > 0)
        with self._lock:
            x = x + 1
        return x[:n]

model = torch.compile(Net(){options})
"""
LINES = {"GL106": 15, "GL107": 16, "GL108": 17, "GL109": 18}


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ("", {"GL106": "warning", "GL107": "warning", "GL108": "warning", "GL109": "warning"}),
        # fullgraph=True fails the compile at a break; torch 2.13 keeps .item() in the graph.
        (", fullgraph=True", {"GL106": "error", "GL107": "warning", "GL108": "warning", "GL109": "error"}),
        (', mode="reduce-overhead"', {"GL106": "error", "GL107": "error", "GL108": "error", "GL109": "error"}),
    ],
    ids=["compiled", "fullgraph", "capture"],
)
def test_severity_by_region(tmp_path: Path, options: str, expected: dict[str, str]) -> None:
    _, report = lint_project(tmp_path, {"app.py": MODEL.format(options=options)}, "--select", "GL106,GL107,GL108,GL109")
    assert {f["code"]: f["severity"] for f in report["findings"]} == expected
    assert {f["code"]: f["line"] for f in report["findings"]} == LINES


def test_findings_name_the_gb_codes_they_predict(tmp_path: Path) -> None:
    source = textwrap.dedent("""
        import warnings
        import torch
        from transformers.utils import logging

        logger = logging.get_logger(__name__)

        @torch.compile
        def step(x):
            warnings.warn("slow")
            print(x)
            logger.warning_once("once")
            logger.info("info")
            return torch.zeros(int(x.max()))
        """)
    _, report = lint_project(tmp_path, {"app.py": source}, "--select", "GL106,GL107")
    predicted = {f["line"]: f["predicts"] for f in report["findings"]}
    assert predicted == {
        10: ["GB0007"], 11: ["GB0059"], 12: ["GB0142", "GB0291"], 13: ["GB0291"], 14: ["GB0124"],
    }


def test_rules_without_a_graph_break_predict_nothing(tmp_path: Path) -> None:
    source = "import torch\n\n@torch.compile(mode='reduce-overhead')\ndef step(x):\n    return x + torch.arange(4)\n"
    _, report = lint_project(tmp_path, {"app.py": source})
    (finding,) = report["findings"]
    assert finding["code"] == "GL203" and finding["predicts"] == []


def test_recurrent_modules_and_requires_grad_predict_their_codes(tmp_path: Path) -> None:
    """A wav2vec2-style feature encoder and an encodec-style LSTM block, reached from the
    compiled model: GL110 at the assignment (GB0206) and the method (GB8985), GL109 at the call
    of the LSTM (GB0014); the parameter loop and the input are not flagged."""
    source = textwrap.dedent("""
        import torch
        from torch import nn

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(4, 4)
                self.proj = nn.Linear(4, 4)

            def forward(self, x):
                for p in self.proj.parameters():
                    p.requires_grad = False
                hidden = x[:, None]
                hidden.requires_grad = True
                scaled = hidden * 2
                scaled.requires_grad_()
                return self.lstm(self.proj(scaled))[0]

        model = torch.compile(Encoder())
        """)
    _, report = lint_project(tmp_path, {"app.py": source}, "--select", "GL109,GL110")
    assert {(f["code"], f["line"]): f["predicts"] for f in report["findings"]} == {
        ("GL110", 15): ["GB0206"], ("GL110", 17): ["GB8985"], ("GL109", 18): ["GB0014"],
    }


def test_layer_drop_branches_predict_data_dependent_branching(tmp_path: Path) -> None:
    """wav2vec2's encoder layer-drop (torch 2.13 breaks at the ``if``, GB0170): the name bound to
    a comparison with ``torch.rand([])`` and the comparison itself, each at its ``if``; the same
    shapes on ints and shapes are not flagged."""
    source = textwrap.dedent("""
        import torch
        from torch import nn

        class Encoder(nn.Module):
            def forward(self, hidden, synced=False):
                for layer in self.layers:
                    p = torch.rand([])
                    skip = self.training and p < self.layerdrop
                    if not skip or synced:
                        hidden = layer(hidden)
                    if p < self.layerdrop:
                        continue
                    short = hidden.shape[1] < 8 and self.training
                    if not short or synced:
                        hidden = hidden * 2
                return hidden

        model = torch.compile(Encoder())
        """)
    _, report = lint_project(tmp_path, {"app.py": source}, "--select", "GL105")
    assert [(f["line"], f["column"], f["predicts"]) for f in report["findings"]] == [
        (10, 16, ["GB0170", "GB0035", "GB0124"]), (12, 16, ["GB0170", "GB0035", "GB0124"]),
    ]
