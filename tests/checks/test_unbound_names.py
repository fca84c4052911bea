"""Names a module binds only under platform tests false on the platform checked
(``unbound_names.py``): a function that reads one raises NameError there, so its block is no
capture region, and what its callers run after calling it is not captured either. The shape is
sglang's Triton MoE runner on the NPU: the alignment helper calls a kernel imported only
``if _is_cuda or _is_hip:``, and the runner runs a compiled activation after the alignment.
Written here in sglang's module layout, no code copied."""

from __future__ import annotations

import textwrap
from contextlib import chdir
from pathlib import Path

import pytest

from tests.checks.conftest import lint_project, run_cli

SGLANG = '[tool.graphlint]\npresets = ["sglang"]\n'

UTILS = """
    import torch


    def is_cuda():
        return torch.cuda.is_available() and torch.version.cuda is not None


    def is_hip():
        return torch.version.hip is not None
"""

ALIGN = """
    import torch

    from sglang.srt.utils import is_cuda, is_hip

    _is_cuda = is_cuda()
    _is_hip = is_hip()

    if _is_cuda or _is_hip:
        from sgl_kernel import align_block_size as kernel_align_block_size


    def align_block_size(topk_ids, block_size):
        sorted_ids = torch.empty(topk_ids.numel() * block_size, dtype=torch.int32, device=topk_ids.device)
        kernel_align_block_size(topk_ids, block_size, sorted_ids)
        return sorted_ids
"""

# Each site is marked: whether a capture on the NPU runs it.
RUNNER = """
    import torch

    from sglang.srt.layers.moe.align import align_block_size


    @torch.compile  # not captured: called after the alignment
    def clamp_mul(x, limit):
        return x.clamp(max=limit) * x


    def run_experts(hidden_states, topk_ids, limit):
        sorted_ids = align_block_size(topk_ids, 16)
        out = clamp_mul(hidden_states, limit)
        return out[sorted_ids]
"""

MODEL = """
    import torch
    from torch import nn

    from sglang.srt.layers.moe.runner import run_experts


    class MoeForCausalLM(nn.Module):
        def forward(self, input_ids, positions, forward_batch):
            hidden = input_ids[input_ids > 0]  # captured: before the experts
            out = run_experts(hidden, positions, 7.0)
            return out[out > 1]  # not captured: after the experts


    EntryClass = MoeForCausalLM
"""

FILES = {
    "python/sglang/__init__.py": "",
    "python/sglang/srt/__init__.py": "",
    "python/sglang/srt/utils.py": UTILS,
    "python/sglang/srt/layers/__init__.py": "",
    "python/sglang/srt/layers/moe/__init__.py": "",
    "python/sglang/srt/layers/moe/align.py": ALIGN,
    "python/sglang/srt/layers/moe/runner.py": RUNNER,
    "python/sglang/srt/models/__init__.py": "",
    "python/sglang/srt/models/moe.py": MODEL,
}


def _check(tmp_path: Path, files: dict[str, str], pyproject: str = SGLANG) -> set[tuple[str, str, int]]:
    _, report = lint_project(tmp_path, {name: textwrap.dedent(text) for name, text in files.items()}, pyproject=pyproject)
    return {(f["path"].rsplit("/", 1)[-1], f["code"], f["line"]) for f in report["findings"] if f["code"] != "GL001"}


def _marked(name: str, text: str, marker: str) -> set[int]:
    return {n for n, line in enumerate(textwrap.dedent(text).splitlines(), 1) if f"# {marker}" in line}


def test_a_kernel_imported_only_on_other_platforms_raises_before_what_follows(tmp_path: Path) -> None:
    found = _check(tmp_path, FILES)
    assert found == {("moe.py", "GL202", line) for line in _marked("moe.py", MODEL, "captured")}, found
    with chdir(tmp_path):  # the report says that code was left out
        _, text = run_cli("check", ".", "--no-cache")
    assert "1 captured function(s) read a name their module binds only under platform tests" in " ".join(text.split())


def _everything_captured(found: set[tuple[str, str, int]]) -> None:
    runner = {("runner.py", "GL101", line) for line in _marked("runner.py", RUNNER, "not captured")}
    model = {("moe.py", "GL202", line) for line in _marked("moe.py", MODEL, "captured") | _marked("moe.py", MODEL, "not captured")}
    assert runner <= found and model <= found, found


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # bound on every platform as well
        ("if _is_cuda or _is_hip:\n", "from sglang.srt.fallback import align_block_size as kernel_align_block_size\nif _is_cuda or _is_hip:\n"),
        # a test the knowledge does not decide
        ("if _is_cuda or _is_hip:", "if _is_cuda or torch.version.git_version:"),
        # a NameError the function catches
        (
            "    kernel_align_block_size(topk_ids, block_size, sorted_ids)\n",
            "    try:\n        kernel_align_block_size(topk_ids, block_size, sorted_ids)\n    except NameError:\n        pass\n",
        ),
        # the function binds the name itself
        ("def align_block_size(topk_ids, block_size):", "def align_block_size(topk_ids, block_size, kernel_align_block_size=None):"),
        # a function may bind the module's name
        ("\n\ndef align_block_size", "\n\ndef load_kernel(k):\n    global kernel_align_block_size\n    kernel_align_block_size = k\n\n\ndef align_block_size"),
        # a star import may bind it
        ("_is_cuda = is_cuda()\n", "_is_cuda = is_cuda()\nfrom sglang.srt.kernels import *\n"),
    ],
)
def test_a_name_that_may_be_bound_raises_nothing(tmp_path: Path, old: str, new: str) -> None:
    align = textwrap.dedent(ALIGN)
    assert old in align
    _everything_captured(_check(tmp_path, {**FILES, "python/sglang/srt/layers/moe/align.py": align.replace(old, new)}))


def test_on_cuda_the_kernel_is_bound(tmp_path: Path) -> None:
    _everything_captured(_check(tmp_path, FILES, SGLANG + 'platform = "cuda"\n'))


def test_a_later_call_in_a_return_raises_as_well(tmp_path: Path) -> None:
    """``return kernel(...)``: the value is evaluated before the function leaves."""
    align = textwrap.dedent(ALIGN).replace(
        "    kernel_align_block_size(topk_ids, block_size, sorted_ids)\n    return sorted_ids\n",
        "    return kernel_align_block_size(topk_ids, block_size, sorted_ids)\n",
    )
    found = _check(tmp_path, {**FILES, "python/sglang/srt/layers/moe/align.py": align})
    assert found == {("moe.py", "GL202", line) for line in _marked("moe.py", MODEL, "captured")}, found
