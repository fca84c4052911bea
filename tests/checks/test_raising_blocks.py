"""Blocks a capture cannot get through (``raising_blocks.py``): a block that surely raises in a
capture, before it can leave another way, is no capture region. The shape is sglang's LFM2 short
convolution (prefill12): its prefill path makes a host tensor, then compares or slices
``forward_batch.extend_prefix_lens``, None in every capture batch; the decode path is captured.
Written here in sglang's module layout, no code copied."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.checks.conftest import lint_project

EXPORTS = '[tool.graphlint.capture-exports]\n"sglang.srt.models.*" = ["EntryClass"]\n'
BARE = "[tool.graphlint]\npresets = []\n" + EXPORTS
# The project's own configuration: the attribute None in every capture.
NONE_PREFIX = '[tool.graphlint]\npresets = []\ncapture-none-attributes = ["forward_batch.extend_prefix_lens"]\n' + EXPORTS
SGLANG = '[tool.graphlint]\npresets = ["sglang"]\n'

CONV = """
    import torch


    def _seq_lens_cpu(query_start_loc):
        return (query_start_loc[1:] - query_start_loc[:-1]).cpu().tolist()


    def causal_conv1d_fn(x, query_start_loc, has_initial_state):
        lengths = _seq_lens_cpu(query_start_loc)
        return x * len(lengths) + has_initial_state
"""

# The exported model: a layer the graph runners capture through it.
CAUSAL_LM = """

    class CausalLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = {conv}()

        def forward(self, input_ids, positions, forward_batch):
            return self.conv(input_ids, forward_batch)


    EntryClass = CausalLM
"""

MODEL = """
    import torch
    from torch import nn

    from sglang.srt.layers.conv import causal_conv1d_fn


    class ShortConv(nn.Module):
        def forward(self, x, forward_batch):
            if forward_batch.forward_mode.is_decode():
                return x * forward_batch.seq_lens.max().item()
            else:
                n = x.shape[0]
                starts = forward_batch.extend_start_loc
                if starts is not None and len(starts) > 1:
                    query_start_loc = torch.cat([starts, torch.tensor([n], device=x.device)])
                    has_initial_state = forward_batch.extend_prefix_lens > 0
                else:
                    query_start_loc = torch.tensor([0, n], device=x.device)
                    has_initial_state = forward_batch.extend_prefix_lens[:1] > 0
                out = causal_conv1d_fn(x, query_start_loc, has_initial_state)
            return out

""" + CAUSAL_LM.format(conv="ShortConv")

# The same prefill path, but each raise may be caught, or may not be reached.
GUARDED = """
    import torch
    from torch import nn


    class GuardedConv(nn.Module):
        def forward(self, x, forward_batch):
            try:
                query_start_loc = torch.tensor([0, x.shape[0]], device=x.device)
                has_initial_state = forward_batch.extend_prefix_lens[:1] > 0
            except TypeError:
                has_initial_state = None
            if x.numel() > 1:
                lengths = torch.tensor([1, x.shape[0]], device=x.device)
                prefix = x.numel() > 2 and forward_batch.extend_prefix_lens[:1]
            if x.numel() > 3:
                starts = torch.tensor([2, x.shape[0]], device=x.device)
                if x.numel() > 4:
                    return starts
                prefix = forward_batch.extend_prefix_lens[:1]
            return x

""" + CAUSAL_LM.format(conv="GuardedConv")


def _files(model: str) -> dict[str, str]:
    files = {
        "sglang/__init__.py": "",
        "sglang/srt/__init__.py": "",
        "sglang/srt/layers/__init__.py": "",
        "sglang/srt/layers/conv.py": CONV,
        "sglang/srt/models/__init__.py": "",
        "sglang/srt/models/short_conv.py": model,
    }
    return {name: textwrap.dedent(text).lstrip("\n") for name, text in files.items()}


def _sites(root: Path, model: str, pyproject: str) -> set[tuple[str, str, int]]:
    root.mkdir(parents=True)
    _, report = lint_project(root, _files(model), pyproject=pyproject)
    return {(f["path"].rsplit("/", 1)[-1], f["code"], f["line"]) for f in report["findings"]}


PREFILL = {
    ("short_conv.py", "GL201", 15),  # torch.tensor([n], device=...): then `None > 0` raises
    ("short_conv.py", "GL201", 18),  # torch.tensor([0, n], device=...): then `None[:1]` raises
    ("conv.py", "GL201", 5),  # .cpu() of the helper the raising block would call after
}
DECODE = ("short_conv.py", "GL202", 10)  # .item() on the decode path: captured


def test_a_block_that_raises_in_every_capture_is_not_captured(tmp_path: Path) -> None:
    """Both branches of the prefill path use ``forward_batch.extend_prefix_lens`` as None cannot
    be used (``> 0``, ``[:1]``): with it None in every capture (the project's own
    ``capture-none-attributes``, or the sglang preset, which also knows the decode branch's mode)
    the host tensors made before the raise, and the helper called after the ``if``, are no
    findings; the decode branch's ``.item()`` is. Without that knowledge each is a finding."""
    bare = _sites(tmp_path / "bare", MODEL, BARE)
    assert PREFILL | {DECODE} <= bare
    for name, config in (("own", NONE_PREFIX), ("preset", SGLANG)):
        found = _sites(tmp_path / name, MODEL, config)
        assert DECODE in found, name
        assert not PREFILL & found, name


def test_a_raise_that_may_be_caught_or_not_reached_leaves_the_block_captured(tmp_path: Path) -> None:
    """A ``try`` body's raise may be caught; the right side of ``and`` may not be evaluated; a
    ``return`` before the raise may leave the block: the host tensors in those blocks stay
    findings."""
    found = _sites(tmp_path / "own", GUARDED, NONE_PREFIX)
    assert {("short_conv.py", "GL201", line) for line in (8, 13, 16)} <= found
