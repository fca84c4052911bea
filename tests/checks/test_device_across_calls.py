"""A tensor's device known across a call: a parameter every call hands module state.

sglang's Ernie 4.5 VL rotary embedding hands its ``cos_sin_cache`` buffer (registered by the base
class, in another file) to a kernel launcher, which moves what it was handed to the query's
device and dtype where they differ. In a capture the model is on one device: that ``.to()``
copies nothing, as ``self.cos_sin_cache.to(q.device)`` copies nothing where the walk sees the
buffer itself. Small projects in sglang's layout (written here, no code copied); the
must-still-fire tests keep the move of a host tensor reported: one caller handing a plain tensor
attribute, a caller's own parameter handed on, a launcher an outside call may run, and a
parameter rebound before the move.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.checks.conftest import lint_project

ROTARY = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/layers/__init__.py": "",
    "sglang/srt/layers/rotary_embedding/__init__.py": "",
    "sglang/srt/layers/rotary_embedding/base.py": """
        import torch
        from torch import nn


        class RotaryEmbedding(nn.Module):
            def __init__(self, dim):
                super().__init__()
                cache = self._compute_cos_sin_cache(dim)
                self.register_buffer("cos_sin_cache", cache, persistent=False)
                self.scales = torch.ones(dim)  # a plain tensor attribute: model.to() leaves it

            def _compute_cos_sin_cache(self, dim):
                return torch.ones(64, dim)
    """,
    "sglang/srt/layers/rotary_embedding/triton_kernels.py": """
        def rope_fused_inplace(q, k, cos_sin_cache, positions):
            if cos_sin_cache.dtype != q.dtype or cos_sin_cache.device != q.device:
                cos_sin_cache = cos_sin_cache.to(device=q.device, dtype=q.dtype)
            q.add_(cos_sin_cache[positions])
            k.add_(cos_sin_cache[positions])
    """,
    "sglang/srt/layers/rotary_embedding/mrope.py": """
        from sglang.srt.layers.rotary_embedding.base import RotaryEmbedding
        from sglang.srt.layers.rotary_embedding.triton_kernels import rope_fused_inplace


        class ErnieRotaryEmbedding(RotaryEmbedding):
            def forward(self, positions, query, key):
                rope_fused_inplace(query, key, cos_sin_cache=self.cos_sin_cache, positions=positions)
                return query, key
    """,
    "sglang/srt/models/__init__.py": "",
    "sglang/srt/models/ernie.py": """
        from torch import nn

        from sglang.srt.layers.rotary_embedding.mrope import ErnieRotaryEmbedding


        class ErnieModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.rotary_emb = ErnieRotaryEmbedding(8)

            def forward(self, positions, query, key):
                return self.rotary_emb(positions, query, key)
    """,
    "sglang/srt/model_executor/__init__.py": "",
    "sglang/srt/model_executor/runner.py": """
        import torch

        from sglang.srt.models.ernie import ErnieModel


        class GraphRunner:
            def __init__(self):
                self.model = ErnieModel()
                self.graph = torch.npu.NPUGraph()

            def capture(self, positions, query, key):
                with torch.npu.graph(self.graph):
                    self.model(positions, query, key)
    """,
}

SGLANG_PRESET = '[tool.graphlint]\npresets = ["sglang"]\n'
KERNEL = "sglang/srt/layers/rotary_embedding/triton_kernels.py"
MROPE = "sglang/srt/layers/rotary_embedding/mrope.py"


def _sites(tmp_path: Path, files: dict[str, str]) -> set[tuple[str, str, int]]:
    files = {k: textwrap.dedent(v).lstrip("\n") for k, v in files.items()}
    _, report = lint_project(tmp_path, files, pyproject=SGLANG_PRESET)
    return {(f["path"].rsplit("/", 1)[-1], f["code"], f["line"]) for f in report["findings"]}


def test_a_parameter_every_call_hands_a_buffer_is_on_the_models_device(tmp_path: Path) -> None:
    assert _sites(tmp_path, ROTARY) == set()


def test_a_caller_handing_a_plain_tensor_attribute_keeps_the_move_reported(tmp_path: Path) -> None:
    """A second caller hands ``self.scales``, made by a factory: ``model.to()`` leaves it on the
    host, and the launcher's move of it copies."""
    mrope = ROTARY[MROPE] + """
        class ScaledRotaryEmbedding(ErnieRotaryEmbedding):
            def forward(self, positions, query, key):
                rope_fused_inplace(query, key, self.scales, positions)
                return query, key
    """
    ernie = ROTARY["sglang/srt/models/ernie.py"].replace(
        "from sglang.srt.layers.rotary_embedding.mrope import ErnieRotaryEmbedding",
        "from sglang.srt.layers.rotary_embedding.mrope import ErnieRotaryEmbedding, ScaledRotaryEmbedding",
    ).replace(
        "return self.rotary_emb(positions, query, key)",
        "self.scaled(positions, query, key)\n                return self.rotary_emb(positions, query, key)",
    ).replace(
        "self.rotary_emb = ErnieRotaryEmbedding(8)",
        "self.rotary_emb = ErnieRotaryEmbedding(8)\n                self.scaled = ScaledRotaryEmbedding(8)",
    )
    sites = _sites(tmp_path, {**ROTARY, MROPE: mrope, "sglang/srt/models/ernie.py": ernie})
    assert sites == {("triton_kernels.py", "GL201", 3)}


def test_a_callers_own_parameter_handed_on_keeps_the_move_reported(tmp_path: Path) -> None:
    """What a caller hands on from its own caller is not followed further up: unknown, reported."""
    mrope = ROTARY[MROPE].replace(
        "def forward(self, positions, query, key):\n                rope_fused_inplace(query, key, cos_sin_cache=self.cos_sin_cache, positions=positions)",
        "def forward(self, positions, query, key, cache=None):\n                rope_fused_inplace(query, key, cos_sin_cache=cache, positions=positions)",
    )
    assert mrope != ROTARY[MROPE]
    assert _sites(tmp_path, {**ROTARY, MROPE: mrope}) == {("triton_kernels.py", "GL201", 3)}


def test_a_launcher_an_outside_call_may_run_keeps_the_move_reported(tmp_path: Path) -> None:
    """Handed to a library (``atexit.register`` here), the launcher may be called with
    anything: not every call is in sight."""
    mrope = ROTARY[MROPE] + """

        import atexit

        atexit.register(rope_fused_inplace)
    """
    assert _sites(tmp_path, {**ROTARY, MROPE: mrope}) == {("triton_kernels.py", "GL201", 3)}


def test_a_parameter_rebound_before_the_move_keeps_it_reported(tmp_path: Path) -> None:
    """``cos_sin_cache = cos_sin_cache.cpu()`` before the move: the moved tensor is no longer
    what the caller handed over."""
    kernel = ROTARY[KERNEL].replace(
        "    if cos_sin_cache.dtype",
        "    cos_sin_cache = cos_sin_cache.cpu()\n            if cos_sin_cache.dtype",
    )
    assert kernel != ROTARY[KERNEL]
    sites = _sites(tmp_path, {**ROTARY, KERNEL: kernel})
    assert ("triton_kernels.py", "GL201", 4) in sites


def test_a_parameter_rebound_later_in_a_loop_keeps_the_move_reported(tmp_path: Path) -> None:
    """A binding after the move, in the loop around it, runs before the next iteration's move."""
    kernel = ROTARY[KERNEL].replace(
        "    if cos_sin_cache.dtype != q.dtype or cos_sin_cache.device != q.device:\n"
        "                cos_sin_cache = cos_sin_cache.to(device=q.device, dtype=q.dtype)\n",
        "    for _ in range(2):\n"
        "                moved = cos_sin_cache.to(device=q.device, dtype=q.dtype)\n"
        "                cos_sin_cache = moved.cpu()\n",
    )
    assert kernel != ROTARY[KERNEL]
    sites = _sites(tmp_path, {**ROTARY, KERNEL: kernel})
    assert ("triton_kernels.py", "GL201", 3) in sites


def test_a_buffer_the_calling_class_registers_itself_is_on_the_models_device(tmp_path: Path) -> None:
    """The caller's own class registers the buffer it hands (same file): no copy either."""
    mrope = ROTARY[MROPE].replace(
        "class ErnieRotaryEmbedding(RotaryEmbedding):\n",
        "class ErnieRotaryEmbedding(RotaryEmbedding):\n"
        "            def __init__(self, dim):\n"
        "                super().__init__(dim)\n"
        "                self.register_buffer(\"sections\", torch.ones(64, dim), persistent=False)\n\n",
    ).replace("cos_sin_cache=self.cos_sin_cache", "cos_sin_cache=self.sections")
    mrope = "        import torch\n" + mrope
    assert "self.sections" in mrope
    assert _sites(tmp_path, {**ROTARY, MROPE: mrope}) == set()
