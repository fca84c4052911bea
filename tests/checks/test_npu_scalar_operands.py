"""0-d host tensors torch_npu takes as scalars (``npu_scalar_operands.toml``), and empty tensors,
which moving copies nothing (``scalar_operands.py``). sglang's Gemma 2 scales its embeddings by
``torch.tensor(self.config.hidden_size**0.5)`` with ``*=``, Gemma 3n divides by
``torch.sqrt(torch.tensor(2.0))`` and clamps with ``torch.maximum(x, torch.tensor(finfo.min))``,
and Ernie 4.5 VL moves ``torch.as_tensor(pad_values, device=...)`` of a list filled only from
``forward_batch.mm_inputs`` (None in every capture batch). A small project in sglang's module
layout, written here; the model is captured eagerly (``torch.npu.graph``) as on an NPU."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.checks.conftest import lint_project

SGLANG = '[tool.graphlint]\npresets = ["sglang"]\n'
EXPORTS = '[tool.graphlint]\npresets = []\n[tool.graphlint.capture-exports]\n"sglang.srt.models.*" = ["EntryClass"]\n'

# Each line marked "# copied" holds a GL201 or GL203 finding; no other line does.
MODEL = """
    import torch
    from torch import nn


    class Scaled(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.embed = nn.Embedding(16, 8)

        def keep(self, value):
            return value

        def forward(self, input_ids, positions, forward_batch, eps: float = 1e-6):
            hidden = self.embed(input_ids)
            normalizer = torch.tensor(self.config.hidden_size**0.5, dtype=hidden.dtype)
            hidden *= normalizer
            hidden = hidden / torch.sqrt(torch.tensor(2.0))
            hidden = hidden - torch.tensor(-1.0).float()
            hidden = torch.add(hidden, torch.full((), 0.5))
            half = torch.tensor(0.5)
            hidden = hidden.mul_(half) + hidden.div(2 * half)
            floor = torch.tensor(torch.finfo(hidden.dtype).min)  # copied: maximum copies its other
            hidden = torch.maximum(hidden, floor)
            hidden = hidden.mul(torch.tensor(eps))  # copied: a parameter, which a capture freezes
            hidden = torch.tensor(3.0) * hidden  # copied: mul copies a 0-d host self
            shift = torch.tensor(1.0)  # copied: also handed to a call
            hidden = hidden + shift + self.keep(shift)
            again = torch.tensor(4.0)  # copied: bound twice
            again = torch.tensor(5.0)  # copied: bound twice
            hidden = hidden * again
            pad_values = []
            if forward_batch.mm_inputs is not None:
                for mm_input in forward_batch.mm_inputs:
                    pad_values.append(mm_input.pad_value)
            pads = torch.as_tensor(pad_values, device=input_ids.device)  # empty in a capture
            nothing = torch.tensor([]).to(hidden.device)
            rows = torch.zeros(0, 8).to(hidden.device)
            ids = torch.tensor([1, 2]).to(hidden.device)  # copied
            return hidden, pads, nothing, rows, ids


    EntryClass = Scaled
"""


def _lines(marker: str) -> set[int]:
    return {n for n, line in enumerate(textwrap.dedent(MODEL).splitlines(), 1) if f"# {marker}" in line}


def _found(root: Path, pyproject: str) -> set[int]:
    root.mkdir(parents=True)
    files = {"sglang/__init__.py": "", "sglang/srt/__init__.py": "", "sglang/srt/models/scaled.py": MODEL}
    _, report = lint_project(root, {k: textwrap.dedent(v) for k, v in files.items()}, pyproject=pyproject)
    copies = [f for f in report["findings"] if f["code"] in ("GL201", "GL203")]
    assert all(f["severity"] == "error" for f in copies), copies
    return {f["line"] for f in copies}


def test_zero_dim_scalar_operands_and_empty_tensors_copy_nothing(tmp_path: Path) -> None:
    assert _found(tmp_path / "preset", SGLANG) == _lines("copied")


def test_a_tensor_empty_only_in_a_capture_batch_needs_the_capture_knowledge(tmp_path: Path) -> None:
    assert _found(tmp_path / "bare", EXPORTS) == _lines("copied") | _lines("empty in a capture")


# In a compiled region that is no capture (a prefill compiled with torch.compile), the batch may
# hold multimodal inputs: the copy of the list is real there.
COMPILED = """
    import torch


    @torch.compile
    def place(input_ids, forward_batch):
        pad_values = []
        if forward_batch.mm_inputs is not None:
            for mm_input in forward_batch.mm_inputs:
                pad_values.append(mm_input.pad_value)
        return torch.as_tensor(pad_values, device=input_ids.device)
"""


def test_an_empty_capture_copy_still_warns_in_a_compiled_region(tmp_path: Path) -> None:
    files = {"sglang/__init__.py": "", "sglang/srt/__init__.py": "", "sglang/srt/place.py": textwrap.dedent(COMPILED)}
    _, report = lint_project(tmp_path, files, pyproject=SGLANG)
    assert [(f["code"], f["line"], f["severity"]) for f in report["findings"]] == [("GL201", 11, "warning")]
