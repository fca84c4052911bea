"""A module-level name bound per platform (``module_branches.py``): sglang's rotary helpers bind
``apply_rotary`` to the NPU kernel's wrapper under ``if _is_npu:`` and to a compiled native
function in the ``else``. On the NPU the ``else`` never runs, so a capture that calls
``apply_rotary`` runs the NPU wrapper only, and the compiled function is no nested compile there
unless something else calls it. Written here in sglang's module layout, no code copied."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.checks.conftest import lint_project

SGLANG = '[tool.graphlint]\npresets = ["sglang"]\n'

UTILS = """
    import torch


    def is_npu():
        return hasattr(torch, "npu") and torch.npu.is_available()


    def is_cpu():
        return False
"""

ROTARY = """
    import torch

    from sglang.srt.utils import is_cpu, is_npu

    _is_npu = is_npu()
    _is_cpu = is_cpu()

    if _is_npu:
        import torch_npu


    @torch.compile(dynamic=True)
    def apply_rotary_native(q, k, cos, sin):
        return q * cos + q * sin, k * cos + k * sin


    def apply_rotary_npu(q, k, cos, sin):
        return torch_npu.npu_rotary_mul(q, cos, sin), torch_npu.npu_rotary_mul(k, cos, sin)


    if _is_npu:
        apply_rotary = apply_rotary_npu
    elif _is_cpu:
        apply_rotary = torch.ops.sgl_kernel.apply_rotary_cpu
    else:
        apply_rotary = apply_rotary_native
"""

# The package re-exports the name, as sglang's layers/rotary_embedding/__init__.py does.
PACKAGE = """
    from sglang.srt.layers.rotary.utils import apply_rotary
"""

MODEL = """
    from torch import nn

    from sglang.srt.layers.rotary import apply_rotary


    class Attention(nn.Module):
        def forward(self, q, k, cos, sin):
            return apply_rotary(q, k, cos, sin)


    class RopeForCausalLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = Attention()

        def forward(self, input_ids, positions, forward_batch):
            return self.attn(input_ids, input_ids, positions, positions)


    EntryClass = RopeForCausalLM
"""

FILES = {
    "python/sglang/__init__.py": "",
    "python/sglang/srt/__init__.py": "",
    "python/sglang/srt/utils.py": UTILS,
    "python/sglang/srt/layers/__init__.py": "",
    "python/sglang/srt/layers/rotary/__init__.py": PACKAGE,
    "python/sglang/srt/layers/rotary/utils.py": ROTARY,
    "python/sglang/srt/models/__init__.py": "",
    "python/sglang/srt/models/rope.py": MODEL,
}
NATIVE = ("utils.py", "GL101", textwrap.dedent(ROTARY).splitlines().index("@torch.compile(dynamic=True)") + 1)


def _check(tmp_path: Path, files: dict[str, str], pyproject: str = SGLANG) -> set[tuple[str, str, int]]:
    _, report = lint_project(tmp_path, {name: textwrap.dedent(text) for name, text in files.items()}, pyproject=pyproject)
    return {(f["path"].rsplit("/", 1)[-1], f["code"], f["line"]) for f in report["findings"] if f["code"] != "GL001"}


def _with_rotary(old: str, new: str) -> dict[str, str]:
    rotary = textwrap.dedent(ROTARY)
    assert old in rotary
    return {**FILES, "python/sglang/srt/layers/rotary/utils.py": rotary.replace(old, new)}


def test_the_npu_binding_is_the_only_one_on_the_npu(tmp_path: Path) -> None:
    assert NATIVE not in _check(tmp_path, FILES)


def test_on_cuda_the_native_binding_is_captured(tmp_path: Path) -> None:
    assert NATIVE in _check(tmp_path, FILES, SGLANG + 'platform = "cuda"\n')


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a test the knowledge does not decide
        ("if _is_npu:\n    apply_rotary = apply_rotary_npu", "if torch.version.git_version:\n    apply_rotary = apply_rotary_npu"),
        # bound on every platform after the branches
        ("    apply_rotary = apply_rotary_native\n", "    apply_rotary = apply_rotary_native\napply_rotary = apply_rotary_native\n"),
        # the NPU's own binding falls back to the compiled one
        ("    return torch_npu.npu_rotary_mul(q, cos, sin), torch_npu.npu_rotary_mul(k, cos, sin)",
         "    if q.dim() != 3:\n        return apply_rotary_native(q, k, cos, sin)\n"
         "    return torch_npu.npu_rotary_mul(q, cos, sin), torch_npu.npu_rotary_mul(k, cos, sin)"),
        # a function rebinds the module's name
        ("\n\nif _is_npu:\n    apply_rotary", "\n\ndef use_native():\n    global apply_rotary\n    apply_rotary = apply_rotary_native\n\n\nif _is_npu:\n    apply_rotary"),
        # what the untaken branch defines is bound on every platform by another statement
        ("else:\n    apply_rotary = apply_rotary_native", "else:\n    def apply_rotary(q, k, cos, sin):\n        return q, k\napply_rotary = apply_rotary_native"),
    ],
)
def test_a_binding_the_platform_may_run_is_kept(tmp_path: Path, old: str, new: str) -> None:
    assert NATIVE in _check(tmp_path, _with_rotary(old, new))


def test_an_untaken_branch_inside_an_undecided_one_binds_nothing(tmp_path: Path) -> None:
    """The ``else`` of a platform ``if`` inside a module-level ``if`` the knowledge does not decide."""
    files = _with_rotary(
        "if _is_npu:\n    apply_rotary = apply_rotary_npu\nelif _is_cpu:\n    apply_rotary = torch.ops.sgl_kernel.apply_rotary_cpu\n"
        "else:\n    apply_rotary = apply_rotary_native",
        "if torch.version.git_version:\n    apply_rotary = apply_rotary_npu\n"
        "else:\n    if _is_npu:\n        apply_rotary = apply_rotary_npu\n    else:\n        apply_rotary = apply_rotary_native",
    )
    assert NATIVE not in _check(tmp_path, files)
