"""``x.to(y.device)`` where ``y`` is what a call made from the tensor ``x`` was made on: no copy.

A small project in the shape of sglang's LongCat-Flash MoE (``models/longcat_flash.py``): the
zero experts' result is made on ``hidden_states``' device, ``final = self.experts(hidden_states,
topk)`` is the MoE layer's output, scaled in place, and ``final += result.to(final.device)``
moves nothing. Written here, with the forms that still copy next to it."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.checks.conftest import lint_project

KERNELS = """
    import torch


    def zero_experts(indices, scales, hidden_states):
        output = torch.zeros_like(hidden_states)
        output.add_(scales.sum())
        return output
"""

LAYERS = """
    import torch
    from torch import nn

    from pkg.ops import fused_kernel  # read by no one: what it returns is unknown


    class Experts(nn.Module):
        def forward(self, hidden_states, topk):
            return torch.empty_like(hidden_states)


    class HostExperts(nn.Module):
        def forward(self, hidden_states, topk):
            return torch.zeros(4)


    class KernelExperts(nn.Module):
        def forward(self, hidden_states, topk):
            return fused_kernel(hidden_states, topk)


    def experts_class():
        return Experts
"""

# Each site is a GL201 candidate; its comment says whether the move still copies.
MODEL = """
    import functools

    import torch
    from torch import nn

    from pkg.kernels import zero_experts
    from pkg.layers import Experts, HostExperts, KernelExperts, experts_class


    class MoE(nn.Module):
        def __init__(self, host):
            super().__init__()
            self.experts = experts_class()()
            self.host_experts = HostExperts()
            self.either = Experts() if host else HostExperts()
            self.kernel = KernelExperts()

        def forward(self, hidden_states, topk_ids, topk_weights, other):
            n, d = hidden_states.shape
            hidden_states = hidden_states.view(-1, d)
            result = zero_experts(topk_ids, topk_weights, hidden_states=hidden_states)
            final = self.experts(hidden_states, topk_ids)
            final *= 2.0
            final += result.to(final.device)  # known
            final += result.to(hidden_states.device)  # known
            final += torch.zeros_like(hidden_states).to(final.device)  # known
            final += torch.tensor([1.0]).to(final.device)  # copies: made on the host
            moved = zero_experts(topk_ids, topk_weights, hidden_states=other)
            final += moved.to(final.device)  # copies: made on another tensor's device
            host = self.host_experts(hidden_states, topk_ids)
            final += result.to(host.device)  # copies: that forward returns a host tensor
            mixed = self.either(hidden_states, topk_ids)
            final += result.to(mixed.device)  # copies: one of the forwards returns a host tensor
            opaque = self.kernel(hidden_states, topk_ids)
            final += result.to(opaque.device)  # kernel
            rebound = self.experts(hidden_states, topk_ids)
            rebound = rebound + other
            final += result.to(rebound.device)  # copies: rebound to another tensor
            part = functools.partial(self.experts, other)
            through = part(hidden_states)
            final += result.to(through.device)  # copies: the partial hands the forward other
            final = final + other  # after the moves: they read the experts' output
            return final.view(n, d)

        def steps(self, hidden_states, topk_ids, topk_weights, n):
            result = zero_experts(topk_ids, topk_weights, hidden_states=hidden_states)
            final = self.experts(hidden_states, topk_ids)
            for _ in range(n):
                final += result.to(final.device)  # copies: the next turn reads the host tensor below
                final = torch.zeros(4)
            return final


    def moved_input(hidden_states, topk_ids, topk_weights):
        result = zero_experts(topk_ids, topk_weights, hidden_states=hidden_states)
        hidden_states = hidden_states.cpu()
        return result.to(hidden_states.device)  # copies: hidden_states was moved to the host


    def run(graph, x, ids, weights, other):
        model = MoE(True)
        with torch.npu.graph(graph):
            model(x, ids, weights, other)
            model.steps(x, ids, weights, 2)
            moved_input(x, ids, weights)
"""

KNOWLEDGE = '[tool.graphlint]\npresets = []\ndevice-returns = {"pkg.layers.KernelExperts.forward" = ["hidden_states"]}\n'


def _lines(tag: str) -> set[int]:
    return {n for n, line in enumerate(textwrap.dedent(MODEL).splitlines(), 1) if f"# {tag}" in line}


def _moves(tmp_path: Path, pyproject: str) -> set[int]:
    files = {
        "pkg/__init__.py": "",
        "pkg/kernels.py": textwrap.dedent(KERNELS),
        "pkg/layers.py": textwrap.dedent(LAYERS),
        "pkg/model.py": textwrap.dedent(MODEL),
    }
    _, report = lint_project(tmp_path, files, pyproject=pyproject)
    return {f["line"] for f in report["findings"] if f["code"] == "GL201" and f["path"].endswith("model.py")}


def test_a_move_to_the_device_of_what_a_call_made_from_the_same_tensor_copies_nothing(tmp_path: Path) -> None:
    found = _moves(tmp_path, "[tool.graphlint]\npresets = []\n")
    assert found == _lines("copies") | _lines("kernel") and len(found) == 9
    assert len(_lines("known")) == 3


def test_device_returns_names_the_parameter_a_forward_graphlint_cannot_read_returns_on(tmp_path: Path) -> None:
    assert _moves(tmp_path, KNOWLEDGE) == _lines("copies")
