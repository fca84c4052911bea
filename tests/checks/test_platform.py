"""``[tool.graphlint] platform``: the device checked, and the knowledge that holds only there
(``[platforms.<name>]`` tables of a preset and of the project's own configuration). A small
project in sglang's module layout (the sglang preset names sglang's own modules), no code copied:
module-level platform flags, a dispatching op with one method per platform, and a DeepGEMM path
that only CUDA takes."""

from __future__ import annotations

import textwrap
from contextlib import chdir, redirect_stderr
from io import StringIO
from pathlib import Path

import pytest

from tests.checks.conftest import check_json, run_cli

FILES = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/utils/__init__.py": """
        from functools import lru_cache

        import torch


        @lru_cache(maxsize=1)
        def is_cuda():
            return torch.cuda.is_available() and torch.version.cuda is not None


        @lru_cache(maxsize=1)
        def is_npu():
            return hasattr(torch, "npu")
    """,
    "sglang/srt/layers/__init__.py": "",
    "sglang/srt/layers/topk.py": """
        import torch

        from sglang.srt.utils import is_cuda, is_npu

        _is_cuda = is_cuda()
        _is_npu = is_npu()


        def postprocess(topk_ids):
            if _is_cuda:
                topk_ids = topk_ids * torch.tensor([2]).to(topk_ids.device)
            if _is_npu:
                topk_ids = topk_ids[: topk_ids.max().item()]
            return topk_ids
    """,
    "sglang/srt/layers/op.py": """
        import torch
        from torch import nn

        from sglang.srt.utils import is_cuda

        _is_cuda = is_cuda()


        class PlatformOp(nn.Module):
            def __init__(self):
                super().__init__()
                self._forward_method = self.forward_cuda if _is_cuda else self.forward_npu

            def forward(self, x):
                return self._forward_method(x)

            def forward_cuda(self, x):
                return x + torch.tensor([1.0]).to(x.device)

            def forward_npu(self, x):
                return x * x.sum().item()
    """,
    "sglang/srt/models/__init__.py": "",
    "sglang/srt/models/tiny.py": """
        import torch
        from torch import nn

        from sglang.srt.layers.op import PlatformOp
        from sglang.srt.layers.topk import postprocess


        class TinyForCausalLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.op = PlatformOp()
                self.use_deep_gemm_bmm = False

            def forward(self, input_ids, positions, forward_batch):
                if self.use_deep_gemm_bmm:
                    input_ids = input_ids.to("cuda")
                return self.op(postprocess(input_ids))


        EntryClass = TinyForCausalLM
    """,
}

# The project's own knowledge of its op, per platform: the NPU never dispatches to forward_cuda,
# CUDA never to forward_npu.
OWN_TABLES = """
[tool.graphlint.platforms.npu]
not-dispatched = {"sglang.srt.layers.op.PlatformOp" = ["forward_cuda"]}

[tool.graphlint.platforms.cuda]
not-dispatched = {"sglang.srt.layers.op.PlatformOp" = ["forward_npu"]}
"""

CUDA_ONLY = {("topk.py", "GL201", 11), ("op.py", "GL201", 18), ("tiny.py", "GL201", 16)}
NPU_ONLY = {("topk.py", "GL202", 13), ("op.py", "GL202", 21)}


def _write(root: Path, pyproject: str) -> Path:
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text(pyproject)
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def _sites(root: Path, *args: str) -> set[tuple[str, str, int]]:
    with chdir(root):
        status, report = check_json(".", *args)
    assert status in (0, 1), report
    return {(f["path"].rsplit("/", 1)[-1], f["code"], f["line"]) for f in report["findings"]}


def _config(platform: str | None) -> str:
    chosen = f'platform = "{platform}"\n' if platform else ""
    return '[tool.graphlint]\npresets = ["sglang"]\n' + chosen + OWN_TABLES


def test_the_npu_is_checked_by_default_and_its_cuda_only_code_is_not_captured(tmp_path: Path) -> None:
    """No ``platform``: the NPU. The sglang preset's ``[platforms.npu]`` makes ``is_cuda()``
    false in a capture (read through the module's ``_is_cuda``) and ``self.use_deep_gemm_bmm``
    False; the project's own ``[tool.graphlint.platforms.npu]`` says the op never dispatches to
    ``forward_cuda``. What the NPU path does in the capture (``.item()``) is still found."""
    sites = _sites(_write(tmp_path / "npu", _config(None)), "--no-cache")
    assert NPU_ONLY <= sites
    assert not CUDA_ONLY & sites


def test_on_cuda_the_npu_only_code_is_not_captured(tmp_path: Path) -> None:
    """``platform = "cuda"``: the opposite tables hold (the preset's ``is_npu()`` false, the
    project's ``forward_npu`` never dispatched), and the CUDA paths are captured."""
    sites = _sites(_write(tmp_path / "cuda", _config("cuda")), "--no-cache")
    assert CUDA_ONLY <= sites
    assert not NPU_ONLY & sites


def test_the_report_names_the_platform_checked(tmp_path: Path) -> None:
    """The JSON summary and the text report's presets line say which device the knowledge was
    read for: a finding missing on a CUDA-only path is then explained, not silently absent."""
    root = _write(tmp_path / "cuda", _config("cuda"))
    with chdir(root):
        _, report = check_json(".", "--no-cache")
        _, text = run_cli("check", ".", "--no-cache")
    assert report["summary"]["platform"] == "cuda"
    assert "presets: sglang (framework knowledge, read for the cuda platform;" in text


def test_the_platform_is_part_of_what_the_cache_is_kept_under(tmp_path: Path) -> None:
    """One cache, the NPU first and then CUDA: the facts and the solved graph of one platform are
    never read for the other."""
    root = _write(tmp_path / "project", _config("npu"))
    cache = str(tmp_path / "cache")
    assert not CUDA_ONLY & _sites(root, "--cache-dir", cache)
    (root / "pyproject.toml").write_text(_config("cuda"))
    assert CUDA_ONLY <= _sites(root, "--cache-dir", cache)


@pytest.mark.parametrize(
    "config, message",
    [
        ('[tool.graphlint]\nplatform = "tpu"\n', "platform must be one of ['npu', 'cuda'], not 'tpu'"),
        ("[tool.graphlint.platforms.tpu]\ncapture-false-calls = []\n", "platforms.tpu: no platform 'tpu'"),
        ("[tool.graphlint.platforms.npu]\ncapture-false-call = []\n", "platforms.npu: unknown keys ['capture-false-call']"),
    ],
)
def test_an_unknown_platform_or_key_is_a_usage_error(tmp_path: Path, config: str, message: str) -> None:
    """Exit status 2, the file named: a typo would silently check another platform, or state
    nothing."""
    root = _write(tmp_path / "project", config)
    err = StringIO()
    with chdir(root), redirect_stderr(err):
        status, _ = run_cli("check", "--no-cache", ".")
    assert status == 2
    assert message in err.getvalue() and str(root / "pyproject.toml") in err.getvalue()


HELD_FILES = {
    "python/sglang/__init__.py": "",
    "python/sglang/srt/distributed/device_communicators/pynccl_allocator.py": """
        def debug_check_symmetric_mempool(tensor):
            if tensor.sum().item() > 0:
                raise RuntimeError("not in the symmetric pool")
    """,
    "python/sglang/srt/layers/norm.py": """
        import torch
        from sglang.srt.distributed.device_communicators.pynccl_allocator import debug_check_symmetric_mempool


        @torch.compile
        def all_reduce_norm(hidden):
            debug_check_symmetric_mempool(hidden)
            return hidden / hidden.norm()
    """,
}


@pytest.mark.parametrize(("platform", "found"), [(None, set()), ("cuda", {("pynccl_allocator.py", "GL105", 2)})])
def test_a_held_preset_still_says_where_code_never_runs(
    tmp_path: Path, platform: str | None, found: set, held_sglang: None
) -> None:
    """No configuration, the sglang preset held (as if it shipped opt-in): its captures are not walked, but
    what it knows of where code never runs still narrows the compiled regions: on the NPU its
    ``[platforms.npu]`` says pynccl's symmetric-memory check never runs (no pynccl communicator),
    so a compiled helper reaching it is no finding there; on CUDA it is."""
    pyproject = f'[tool.graphlint]\nplatform = "{platform}"\n' if platform else ""
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text(pyproject)
    for name, text in HELD_FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    with chdir(root):
        _, report = check_json(".", "--no-cache")
        _, text = run_cli("check", ".", "--no-cache")
    assert (report["summary"]["presets"], report["summary"]["held_presets"]) == ([], ["sglang"])
    sites = {(f["path"].rsplit("/", 1)[-1], f["code"], f["line"]) for f in report["findings"]}
    assert found <= sites if found else sites == set()
    assert "held (opt-in) presets: sglang:" in text
