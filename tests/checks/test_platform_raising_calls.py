"""Calls that raise on the platform checked whatever their arguments (``platform-raising-calls``,
``raising_blocks.py``): a block that surely makes one raises, so it is no capture region, and what
a caller runs after a function whose every way out makes one is not captured either. The shape is
sglang's Triton MoE runner on the NPU: the alignment helper either builds a JIT CUDA kernel
(imported in the branch that uses it) or calls one imported only on other platforms, and the
runner runs a compiled activation after the alignment. Written here in sglang's module layout,
no code copied."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.checks.conftest import lint_project
from tests.checks.test_unbound_names import MODEL, RUNNER

PYPROJECT = """
    [tool.graphlint]
    presets = ["sglang"]

    [tool.graphlint.platforms.npu]
    platform-raising-calls = ["sglang.jit_kernel.align.align_block_size"]
"""

UTILS = """
    import torch


    def is_cuda():
        return torch.cuda.is_available() and torch.version.cuda is not None
"""

JIT_ALIGN = """
    def align_block_size(topk_ids, block_size, sorted_ids):
        raise NotImplementedError  # stands for a CUDA build
"""

ALIGN = """
    import os

    import torch

    from sglang.srt.utils import is_cuda

    _is_cuda = is_cuda()

    if _is_cuda:
        from sgl_kernel import align_block_size as kernel_align_block_size


    def align_block_size(topk_ids, block_size):
        sorted_ids = torch.empty(topk_ids.numel() * block_size, dtype=torch.int32, device=topk_ids.device)
        if os.environ.get("USE_JIT_ALIGN"):
            from sglang.jit_kernel.align import align_block_size as jit_align_block_size

            jit_align_block_size(topk_ids, block_size, sorted_ids)
        else:
            kernel_align_block_size(topk_ids, block_size, sorted_ids)
        return sorted_ids
"""

# The runner and the model of test_unbound_names.py: each site is marked, whether a capture on the
# NPU runs it.
FILES = {
    "python/sglang/__init__.py": "",
    "python/sglang/jit_kernel/__init__.py": "",
    "python/sglang/jit_kernel/align.py": JIT_ALIGN,
    "python/sglang/srt/__init__.py": "",
    "python/sglang/srt/utils.py": UTILS,
    "python/sglang/srt/layers/__init__.py": "",
    "python/sglang/srt/layers/moe/__init__.py": "",
    "python/sglang/srt/layers/moe/align.py": ALIGN,
    "python/sglang/srt/layers/moe/runner.py": RUNNER,
    "python/sglang/srt/models/__init__.py": "",
    "python/sglang/srt/models/moe.py": MODEL,
}


def _check(tmp_path: Path, files: dict[str, str], pyproject: str = PYPROJECT) -> set[tuple[str, str, int]]:
    text = {name: textwrap.dedent(body) for name, body in files.items()}
    _, report = lint_project(tmp_path, text, pyproject=textwrap.dedent(pyproject))
    return {(f["path"].rsplit("/", 1)[-1], f["code"], f["line"]) for f in report["findings"] if f["code"] != "GL001"}


def _marked(text: str, marker: str) -> set[int]:
    return {n for n, line in enumerate(textwrap.dedent(text).splitlines(), 1) if f"# {marker}" in line}


def _everything_captured(found: set[tuple[str, str, int]]) -> None:
    runner = {("runner.py", "GL101", line) for line in _marked(RUNNER, "not captured")}
    model = {("moe.py", "GL202", line) for line in _marked(MODEL, "captured") | _marked(MODEL, "not captured")}
    assert runner <= found and model <= found, found


def test_a_branch_that_makes_a_raising_call_raises_before_what_follows(tmp_path: Path) -> None:
    found = _check(tmp_path, FILES)
    assert found == {("moe.py", "GL202", line) for line in _marked(MODEL, "captured")}, found


def test_a_module_level_import_qualifies_the_call_too(tmp_path: Path) -> None:
    align = textwrap.dedent(ALIGN).replace(
        "        from sglang.jit_kernel.align import align_block_size as jit_align_block_size\n\n", ""
    ).replace("import os\n", "import os\n\nimport sglang.jit_kernel.align as jit\n")
    align = align.replace("        jit_align_block_size(", "        jit.align_block_size(")
    assert "jit.align_block_size(" in align and "as jit_align_block_size" not in align
    found = _check(tmp_path, {**FILES, "python/sglang/srt/layers/moe/align.py": align})
    assert found == {("moe.py", "GL202", line) for line in _marked(MODEL, "captured")}, found


def test_without_the_knowledge_the_jit_branch_may_return(tmp_path: Path) -> None:
    _everything_captured(_check(tmp_path, FILES, '[tool.graphlint]\npresets = ["sglang"]\n'))


def test_on_another_platform_the_call_may_return(tmp_path: Path) -> None:
    _everything_captured(_check(tmp_path, FILES, PYPROJECT.replace("presets", 'platform = "cuda"\n    presets')))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a try around the call may catch what it raises
        (
            "        jit_align_block_size(topk_ids, block_size, sorted_ids)\n",
            "        try:\n            jit_align_block_size(topk_ids, block_size, sorted_ids)\n"
            "        except RuntimeError:\n            pass\n",
        ),
        # the right side of ``or``: the call may not be made
        (
            "        jit_align_block_size(topk_ids, block_size, sorted_ids)\n",
            "        sorted_ids.numel() or jit_align_block_size(topk_ids, block_size, sorted_ids)\n",
        ),
        # a call in a lambda is not made where the lambda is made
        (
            "        jit_align_block_size(topk_ids, block_size, sorted_ids)\n",
            "        align = lambda: jit_align_block_size(topk_ids, block_size, sorted_ids)\n",
        ),
        # another function of the same module is not listed
        ("import align_block_size as jit_align_block_size", "import prepare as jit_align_block_size"),
        # a relative import is resolved only once the project is linked: not taken as raising
        ("from sglang.jit_kernel.align import", "from .....jit_kernel.align import"),
    ],
)
def test_a_call_that_may_return_raises_nothing(tmp_path: Path, old: str, new: str) -> None:
    align = textwrap.dedent(ALIGN)
    assert old in align
    jit = textwrap.dedent(JIT_ALIGN) + "\n\ndef prepare(topk_ids, block_size, sorted_ids):\n    return sorted_ids\n"
    files = {**FILES, "python/sglang/srt/layers/moe/align.py": align.replace(old, new), "python/sglang/jit_kernel/align.py": jit}
    _everything_captured(_check(tmp_path, files))


def test_an_import_in_the_branch_stays_in_it(tmp_path: Path) -> None:
    """A name the branch imports names something else after it: the call there is not the
    listed one."""
    align = textwrap.dedent(ALIGN).replace(
        "    else:\n        kernel_align_block_size(topk_ids, block_size, sorted_ids)\n",
        "    jit_align_block_size = torch.sort\n    jit_align_block_size(topk_ids)\n",
    )
    align = align.replace("        jit_align_block_size(topk_ids, block_size, sorted_ids)\n", "        pass\n")
    _everything_captured(_check(tmp_path, {**FILES, "python/sglang/srt/layers/moe/align.py": align}))
