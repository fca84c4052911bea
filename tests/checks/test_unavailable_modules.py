"""``unavailable-modules``: what the platform checked cannot import, and the project modules that
therefore cannot be imported there. A small project in sglang's shape (no code copied): attention
backends that import a CUDA kernel package at their top level, one that imports it under
``try``, one under an ``if``, a helper that imports a backend at its top level, and a kernel
package whose ``__init__`` imports one; the model imports each where it calls it, as sglang's
attention registry does. Each helper syncs the host in the capture (GL202)."""

from __future__ import annotations

import textwrap
from contextlib import chdir
from pathlib import Path

from tests.checks.conftest import check_json, run_cli

ATTENTION = "sglang/srt/layers/attention"

FILES = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/layers/__init__.py": "",
    f"{ATTENTION}/__init__.py": "",
    # imports flash_mla at its top level: the project's own [platforms.npu] says the NPU lacks it
    f"{ATTENTION}/mla_backend.py": """
        import torch
        from flash_mla import flash_mla_with_kvcache


        def mla_decode(q):
            return q[: q.sum().item()]
    """,
    # imports sgl_kernel at its top level: the sglang preset says the NPU lacks it
    f"{ATTENTION}/fa_backend.py": """
        from sgl_kernel import merge_state_v2


        def fa_decode(q):
            return q[: q.max().item()]
    """,
    # imports the MLA backend at its top level: cannot be imported where that backend cannot
    f"{ATTENTION}/mla_utils.py": """
        from .mla_backend import mla_decode


        def plan(q):
            return q[: q.min().item()]
    """,
    # a kernel package whose __init__ imports flash_mla: none of its modules can be imported
    f"{ATTENTION}/mla_kernels/__init__.py": """
        import flash_mla
    """,
    f"{ATTENTION}/mla_kernels/fused.py": """
        def fused(q):
            return q[: q.argmax().item()]
    """,
    # imports flash_mla under try / under an if: importable without it
    f"{ATTENTION}/guarded_backend.py": """
        try:
            from flash_mla import flash_mla_with_kvcache
        except ImportError:
            flash_mla_with_kvcache = None


        def guarded_decode(q):
            return q[: q.numel() * q.sum().item()]
    """,
    f"{ATTENTION}/tested_backend.py": """
        import torch

        if torch.version.cuda is not None:
            import flash_mla


        def tested_decode(q):
            return q[: q.mean().item()]
    """,
    "sglang/srt/models/__init__.py": "",
    "sglang/srt/models/tiny.py": """
        from torch import nn


        class TinyForCausalLM(nn.Module):
            def forward(self, input_ids, positions, forward_batch):
                from sglang.srt.layers.attention.fa_backend import fa_decode
                from sglang.srt.layers.attention.guarded_backend import guarded_decode
                from sglang.srt.layers.attention.mla_backend import mla_decode
                from sglang.srt.layers.attention.mla_kernels.fused import fused
                from sglang.srt.layers.attention.mla_utils import plan
                from sglang.srt.layers.attention.tested_backend import tested_decode

                x = fa_decode(mla_decode(input_ids))
                x = fused(plan(x))
                return tested_decode(guarded_decode(x))


        EntryClass = TinyForCausalLM
    """,
}

OWN_TABLE = '\n[tool.graphlint.platforms.npu]\nunavailable-modules = ["flash_mla"]\n'
UNIMPORTABLE = {("mla_backend.py", "GL202", 6), ("fa_backend.py", "GL202", 5), ("mla_utils.py", "GL202", 5), ("fused.py", "GL202", 2)}
IMPORTABLE = {("guarded_backend.py", "GL202", 8), ("tested_backend.py", "GL202", 8)}


def _check(root: Path, platform: str) -> tuple[set[tuple[str, str, int]], str, str]:
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text(f'[tool.graphlint]\npresets = ["sglang"]\nplatform = "{platform}"\n{OWN_TABLE}')
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    with chdir(root):
        status, report = check_json(".", "--no-cache")
        _, text = run_cli("check", ".", "--no-cache")
        _, regions = run_cli("regions", ".", "--no-cache")
    assert status in (0, 1), report
    sites = {(f["path"].rsplit("/", 1)[-1], f["code"], f["line"]) for f in report["findings"]}
    return sites, text, regions


def test_on_the_npu_no_region_enters_a_module_it_cannot_import(tmp_path: Path) -> None:
    """The backends importing a package the NPU lacks at their top level (the project's own
    ``flash_mla``, the preset's ``sgl_kernel``), the helper importing one of them, and the
    modules of the package whose ``__init__`` imports one: none of their functions runs on the
    NPU. The backends importing it under ``try`` or an ``if`` still run, and are still checked.
    The report counts the modules left out, and ``regions`` names each with what it imports."""
    sites, text, regions = _check(tmp_path / "npu", "npu")
    assert IMPORTABLE <= sites
    assert not UNIMPORTABLE & sites
    assert "5 module(s) cannot be imported on the platform checked (unavailable-modules)" in text
    assert f"{ATTENTION}/mla_utils.py: cannot be imported on the platform checked: imports sglang.srt.layers.attention.mla_backend" in regions
    assert f"{ATTENTION}/mla_kernels/fused.py: cannot be imported on the platform checked: imports sglang.srt.layers.attention.mla_kernels" in regions
    assert f"{ATTENTION}/fa_backend.py: cannot be imported on the platform checked: imports sgl_kernel" in regions


def test_on_cuda_every_module_imports_and_is_checked(tmp_path: Path) -> None:
    """CUDA has the kernel packages: the same capture reaches every backend."""
    sites, text, _ = _check(tmp_path / "cuda", "cuda")
    assert UNIMPORTABLE | IMPORTABLE <= sites
    assert "cannot be imported" not in text
