"""A function whose every return is made on a parameter's device: moving what it returns to the
device of the argument handed to that parameter copies nothing. A small project in the shape of
sglang's LongCat-Flash MoE (``models/longcat_flash.py`` calling ``zero_experts_compute_triton``
of ``layers/moe/ep_moe/kernels.py``, written here), with the forms that still copy."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.checks.conftest import lint_project

KERNELS = """
    import torch


    def zero_experts(indices, scales, hidden_states):
        output = torch.zeros_like(hidden_states).to(hidden_states.device)
        output.add_(scales.sum())
        return output


    def scaled(x, scale):
        if scale is None:
            return None
        if scale > 1:
            return x.new_zeros(x.shape)
        return x.view(-1).to(torch.float32)


    def made_here(x, n):
        return torch.arange(n)


    def either(x, y, flag):
        if flag:
            return torch.empty_like(x)
        return torch.empty_like(y)


    def rebinds(x):
        x = x.cpu()
        return torch.empty_like(x)


    def two_bindings(x, flag):
        out = torch.empty(4)
        if flag:
            out = torch.empty_like(x)
        return out


    def helper(x):
        return torch.empty_like(x)


    def helper_elsewhere(x):
        return torch.empty_like(x)
"""

# Each site is a GL201 candidate; its comment says whether the move still copies.
MODEL = """
    import torch
    from torch import nn

    from pkg import kernels
    from pkg.kernels import either, helper, made_here, rebinds, scaled, two_bindings, zero_experts


    def helper(x):  # rebinds the imported name: this one runs
        return torch.zeros(3)


    class MoE(nn.Module):
        def forward(self, hidden_states, topk_ids, topk_weights, other, n):
            result = zero_experts(topk_ids, topk_weights, hidden_states=hidden_states)
            out = hidden_states + result.to(hidden_states.device)  # known
            out = out + scaled(hidden_states, 2.0).to(hidden_states.device)  # known
            out = out + kernels.zero_experts(topk_ids, topk_weights, hidden_states).to(hidden_states.device)  # known
            out = out + result.to(other.device)  # copies: another tensor's device
            out = out + made_here(hidden_states, n).to(hidden_states.device)  # copies: made on the host
            out = out + either(hidden_states, other, n).to(hidden_states.device)  # copies: one return is on other
            out = out + rebinds(hidden_states).to(hidden_states.device)  # copies: the parameter is rebound
            out = out + two_bindings(hidden_states, n).to(hidden_states.device)  # copies: the host binding
            out = out + helper(hidden_states).to(hidden_states.device)  # copies: the local helper runs
            out = out + kernels.helper_elsewhere(hidden_states).to(hidden_states.device)  # known
            moved = zero_experts(topk_ids, topk_weights, other)
            other = other.cpu()
            out = out + moved.to(other.device)  # copies: other is rebound before the move
            again = zero_experts(topk_ids, topk_weights, hidden_states)
            again = torch.zeros(2)
            return out + again.to(hidden_states.device)  # copies: rebound to a host tensor


    def run(graph, x, ids, weights, other, n):
        model = MoE()
        with torch.npu.graph(graph):
            model(x, ids, weights, other, n)
"""


def _lines(tag: str) -> set[int]:
    return {n for n, line in enumerate(textwrap.dedent(MODEL).splitlines(), 1) if f"# {tag}" in line}


def test_a_move_to_the_device_a_callee_made_its_return_on_copies_nothing(tmp_path: Path) -> None:
    files = {"pkg/__init__.py": "", "pkg/kernels.py": textwrap.dedent(KERNELS), "pkg/model.py": textwrap.dedent(MODEL)}
    _, report = lint_project(tmp_path, files, pyproject="[tool.graphlint]\npresets = []\n")
    found = {f["line"] for f in report["findings"] if f["code"] == "GL201" and f["path"].endswith("model.py")}
    assert found == _lines("copies") and len(found) == 8
    assert _lines("known")
