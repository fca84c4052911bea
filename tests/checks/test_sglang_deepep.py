"""sglang's DeepEP normal dispatch under capture (prefill12): no graph runner captures it (the
runners set ``is_extend_in_batch`` False before the forward they capture, and the normal mode
turns the graphs off), so the preset states ``DispatchOutputChecker.format_is_deepep_normal(...)``
false in every capture and the MoE runners' permutes registered for that format outside them.
Written here as a small project in sglang's module layout (the preset names sglang's own
modules), no code copied."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.checks.conftest import lint_project

SGLANG = '[tool.graphlint]\npresets = ["sglang"]\n'
# The same capture of the exported model, configured by hand with the preset off.
BARE = '[tool.graphlint]\npresets = []\n[tool.graphlint.capture-exports]\n"sglang.srt.models.*" = ["EntryClass"]\n'

# A dispatch output's format is checked by a static method of a class the dispatcher package
# re-exports; the MoE runner picks its permute from a registry by that format; the NPU MoE method
# branches on it, importing the checker inside the method.
DEEPEP = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/layers/__init__.py": "",
    "sglang/srt/layers/moe/__init__.py": "",
    "sglang/srt/layers/moe/token_dispatcher/__init__.py": """
        from sglang.srt.layers.moe.token_dispatcher.base import DispatchOutputChecker

        __all__ = ["DispatchOutputChecker"]
    """,
    "sglang/srt/layers/moe/token_dispatcher/base.py": """
        class DispatchOutputChecker:
            @staticmethod
            def format_is_deepep_normal(dispatch_output):
                return dispatch_output.format == "deepep_normal"
    """,
    "sglang/srt/layers/moe/moe_runner/__init__.py": "",
    "sglang/srt/layers/moe/moe_runner/base.py": """
        class PermuteMethodPool:
            _pre_permute = {}

            @classmethod
            def register_pre_permute(cls, dispatch_name, runner_name, func):
                cls._pre_permute[(dispatch_name, runner_name)] = func

            @classmethod
            def get_pre_permute(cls, dispatch_name, runner_name):
                return cls._pre_permute[(dispatch_name, runner_name)]


        def register_pre_permute(dispatch_name, runner_name):
            def decorator(func):
                PermuteMethodPool.register_pre_permute(dispatch_name, runner_name, func)
                return func

            return decorator
    """,
    "sglang/srt/layers/moe/moe_runner/deep_gemm.py": """
        import torch

        from sglang.srt.layers.moe.moe_runner.base import register_pre_permute


        @register_pre_permute("deepep_normal", "deep_gemm")
        def pre_permute_deepep_normal_to_deep_gemm(dispatch_output):
            counts = torch.tensor(dispatch_output.num_recv_tokens_per_expert, device="cpu", pin_memory=True)
            return dispatch_output.hidden_states, counts.to(dispatch_output.hidden_states.device)


        @register_pre_permute("deepep_ll", "deep_gemm")
        def pre_permute_deepep_ll_to_deep_gemm(dispatch_output):
            return dispatch_output.hidden_states, dispatch_output.masked_m.max().item()
    """,
    "sglang/srt/layers/moe/moe_runner/runner.py": """
        from sglang.srt.layers.moe.moe_runner.base import PermuteMethodPool
        from sglang.srt.layers.moe.token_dispatcher import DispatchOutputChecker


        class MoeRunner:
            def __init__(self):
                self.pre_permute_func = None

            def run(self, dispatch_output):
                self.pre_permute_func = PermuteMethodPool.get_pre_permute(dispatch_output.format, "deep_gemm")
                hidden_states, counts = self.pre_permute_func(dispatch_output)
                if DispatchOutputChecker.format_is_deepep_normal(dispatch_output):
                    return hidden_states * counts.sum().item()
                return hidden_states
    """,
    "sglang/srt/layers/quantization/__init__.py": "",
    "sglang/srt/layers/quantization/unquant.py": """
        import torch


        class UnquantizedFusedMoEMethod:
            def apply(self, dispatch_output):
                from sglang.srt.layers.moe.token_dispatcher.base import DispatchOutputChecker

                if DispatchOutputChecker.format_is_deepep_normal(dispatch_output):
                    group_list = torch.tensor(
                        dispatch_output.num_recv_tokens_per_expert,
                        device=dispatch_output.hidden_states.device,
                    )
                else:
                    group_list = dispatch_output.group_list.to(torch.int64)
                return dispatch_output.hidden_states * group_list.shape[0]
    """,
    "sglang/srt/models/__init__.py": "",
    "sglang/srt/models/moe_model.py": """
        from torch import nn

        from sglang.srt.layers.moe.moe_runner.runner import MoeRunner
        from sglang.srt.layers.quantization.unquant import UnquantizedFusedMoEMethod


        class MoeForCausalLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.runner = MoeRunner()
                self.method = UnquantizedFusedMoEMethod()

            def forward(self, input_ids, positions, forward_batch):
                dispatch_output = forward_batch.dispatch_output
                return self.method.apply(dispatch_output) + self.runner.run(dispatch_output)


        EntryClass = MoeForCausalLM
    """,
}


def _sites(root: Path, pyproject: str) -> set[tuple[str, str, int]]:
    root.mkdir(parents=True)
    files = {name: textwrap.dedent(text).lstrip("\n") for name, text in DEEPEP.items()}
    _, report = lint_project(root, files, pyproject=pyproject)
    return {(f["path"].rsplit("/", 1)[-1], f["code"], f["line"]) for f in report["findings"]}


def test_deepep_normal_dispatch_output_is_never_captured(tmp_path: Path) -> None:
    """With the preset, the capture of the exported MoE model no longer reaches what only a DeepEP
    normal dispatch output runs: the NPU method's branch under ``format_is_deepep_normal(...)``
    (imported inside the method), the runner's branch under it (through the package's re-export)
    and the pre-permute registered for that format (``outside-captures``). The low-latency
    permute's `.item()` is still a finding. Without that knowledge every one of them is."""
    normal_only = {
        ("unquant.py", "GL201", 9),  # torch.tensor(counts, device=...) under format_is_deepep_normal
        ("runner.py", "GL202", 13),  # .item() under format_is_deepep_normal
        ("deep_gemm.py", "GL201", 9),  # the normal-format permute's host-to-device move
    }
    low_latency = ("deep_gemm.py", "GL202", 14)
    bare = _sites(tmp_path / "bare", BARE)
    assert normal_only | {low_latency} <= bare
    preset = _sites(tmp_path / "preset", SGLANG)
    assert low_latency in preset
    assert not normal_only & preset
