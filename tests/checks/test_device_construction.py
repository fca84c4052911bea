"""Plain tensor attributes made while the framework's loader builds the model under its target
device (``device_construction.py``, ``device-built-classes``): sglang's ``load_model`` builds the
``EntryClass`` under ``with target_device:``, so a factory without ``device=`` in an
``__init__`` makes its tensor on the NPU and its ``.to(x.device)`` under capture copies nothing.
The shapes are sglang's Gemma 3 rotary embedding (a buffer's alias kept in ``__init__``, moved
back in ``forward``) and Ernie 4.5 VL's cached token ids; written here in sglang's module
layout, no code copied."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.checks.conftest import lint_project

SGLANG = '[tool.graphlint]\npresets = ["sglang"]\n'
# The same capture roots without the loader's knowledge (the sglang preset's exports alone).
EXPORTS_ONLY = (
    '[tool.graphlint]\npresets = []\n[tool.graphlint.capture-exports]\n"sglang.srt.models.*" = ["EntryClass"]\n'
)

LOADER = """
    import torch


    def _initialize_model(model_class, config):
        return model_class(config)


    def process_weights_after_loading(layer):
        layer.scales = torch.ones(3)  # after the loader's `with`: on the host


    def load_model(model_class, config, device):
        target_device = torch.device(device)
        with target_device:
            model = _initialize_model(model_class, config)
        process_weights_after_loading(model.rotary)
        return model.eval()
"""

# A layer a model builds, and a runner builds too (outside the loader: on the host).
TABLE = """
    import torch
    from torch import nn


    class OffsetTable(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.offsets = torch.arange(n)

        def forward(self, x):
            return x + self.offsets.to(x.device)
"""

RUNNER = """
    from sglang.srt.layers.table import OffsetTable


    class ModelRunner:
        def __init__(self):
            self.table = OffsetTable(8)
"""

MODEL = """
    import torch
    from torch import nn

    from sglang.srt.layers.table import OffsetTable


    def restore_frequencies(self, device):  # a helper of no class: what it moves stays where it is
        self.original_inv_freq = self.original_inv_freq.to(device)


    class Rotary(nn.Module):
        def __init__(self, dim):
            super().__init__()
            inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
            self.register_buffer("inv_freq", inv_freq, persistent=False)
            self.original_inv_freq = self.inv_freq
            self.token_ids = torch.tensor([3, 5, 7], dtype=torch.long)
            self.host_ids = torch.tensor([3, 5, 7], device="cpu")
            with torch.device("cpu"):
                self.host_steps = torch.arange(4)
            self.scales = torch.ones(3)
            self.later = None

        def reset(self, device):
            self.original_inv_freq = self.original_inv_freq.to(device)
            self.register_buffer("inv_freq", self.original_inv_freq, persistent=False)

        def forward(self, x, positions):
            self.reset(x.device)
            ids = self.token_ids.to(device=x.device, dtype=positions.dtype)
            host = self.host_ids.to(x.device)
            steps = self.host_steps.to(x.device)
            scales = self.scales.to(x.device)
            if self.later is None:
                self.later = torch.zeros(4)
            late = self.later.to(x.device)
            return x * self.inv_freq[0] + ids.sum() + host.sum() + steps.sum() + scales.sum() + late.sum()


    class CausalLM(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.rotary = Rotary(8)
            self.table = OffsetTable(8)

        def forward(self, input_ids, positions, forward_batch):
            return self.table(self.rotary(input_ids, positions))


    EntryClass = CausalLM
"""


def _files() -> dict[str, str]:
    files = {
        "sglang/__init__.py": "",
        "sglang/srt/__init__.py": "",
        "sglang/srt/layers/__init__.py": "",
        "sglang/srt/layers/table.py": TABLE,
        "sglang/srt/model_loader/__init__.py": "",
        "sglang/srt/model_loader/loader.py": LOADER,
        "sglang/srt/model_executor/__init__.py": "",
        "sglang/srt/model_executor/model_runner.py": RUNNER,
        "sglang/srt/models/__init__.py": "",
        "sglang/srt/models/rotary_lm.py": MODEL,
    }
    return {name: textwrap.dedent(text).lstrip("\n") for name, text in files.items()}


def _copies(root: Path, pyproject: str) -> set[tuple[str, int]]:
    root.mkdir(parents=True)
    _, report = lint_project(root, _files(), pyproject=pyproject)
    return {(f["path"].rsplit("/", 1)[-1], f["line"]) for f in report["findings"] if f["code"] == "GL201"}


def _line(text: str, marker: str) -> int:
    """The line of the last place ``marker`` is in ``text`` (the method, not the helper)."""
    return max(n for n, line in enumerate(textwrap.dedent(text).lstrip("\n").splitlines(), 1) if marker in line)


ALIAS_MOVE = ("rotary_lm.py", _line(MODEL, "self.original_inv_freq.to(device)"))  # the buffer's alias: on the NPU
CACHED_IDS = ("rotary_lm.py", _line(MODEL, "self.token_ids.to("))  # torch.tensor in __init__: on the NPU
HOST_IDS = ("rotary_lm.py", _line(MODEL, "self.host_ids.to("))  # device="cpu" in __init__: a host tensor
HOST_STEPS = ("rotary_lm.py", _line(MODEL, "self.host_steps.to("))  # made under torch.device("cpu")
RESCALED = ("rotary_lm.py", _line(MODEL, "self.scales.to("))  # the loader's post-processing stores a host tensor
LATE = ("rotary_lm.py", _line(MODEL, "self.later.to("))  # torch.zeros in forward: on the host
RUNNER_TABLE = ("table.py", _line(TABLE, "self.offsets.to("))  # OffsetTable is built by the runner too


def test_the_loaders_device_makes_construction_tensors_device_tensors(tmp_path: Path) -> None:
    found = _copies(tmp_path / "sglang", SGLANG)
    assert ALIAS_MOVE not in found and CACHED_IDS not in found
    assert {HOST_IDS, HOST_STEPS, RESCALED, LATE, RUNNER_TABLE} <= found


def test_without_the_loaders_knowledge_every_move_is_a_copy(tmp_path: Path) -> None:
    found = _copies(tmp_path / "bare", EXPORTS_ONLY)
    assert {ALIAS_MOVE, CACHED_IDS, HOST_IDS, HOST_STEPS, LATE, RUNNER_TABLE} <= found
