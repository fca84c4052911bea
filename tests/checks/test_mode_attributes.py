"""A field of the capture batch that is None in some capture modes only (``mode_attributes.py``,
``raising_blocks.py``). The shape is sglang's: the decode runner captures TARGET_VERIFY and
DLLM_EXTEND batches without ``extend_seq_lens_cpu`` (None), the draft-extend runners capture
DRAFT_EXTEND_V2 batches with it (a list), and no runner hands ``extend_prefix_lens_cpu``. A
layer's extend path first makes host indices (``.tolist()``), then loops over those lists: in
the modes where that raises, the warm-up fails and nothing of the path is captured. Written
here in sglang's module layout, no code copied."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.checks.conftest import lint_project

EXPORTS = '[tool.graphlint.capture-exports]\n"sglang.srt.models.*" = ["EntryClass"]\n'
# The project's own configuration: three modes, the field None in two of them, a list in the third.
OWN = (
    '[tool.graphlint]\npresets = []\ncapture-modes = ["DECODE", "TARGET_VERIFY", "DRAFT_EXTEND"]\n'
    'capture-none-attributes = ["forward_batch.extend_prefix_lens_cpu"]\n'
    '[tool.graphlint.capture-mode-calls]\n"forward_mode.is_decode_or_idle" = ["DECODE"]\n'
    '[tool.graphlint.capture-mode-none-attributes]\n"forward_batch.extend_seq_lens_cpu" = ["TARGET_VERIFY"]\n'
    '[tool.graphlint.capture-mode-true-attributes]\n"forward_batch.extend_seq_lens_cpu" = ["DRAFT_EXTEND"]\n'
    + EXPORTS
)
# The same without the per-mode tables (what the project said before them).
WITHOUT_MODES = OWN.split("[tool.graphlint.capture-mode-none-attributes]")[0] + EXPORTS
SGLANG = '[tool.graphlint]\npresets = ["sglang"]\n'

LAYER = """
    import torch
    from torch import nn


    class ConvAttention(nn.Module):
        @staticmethod
        def _host_indices(forward_batch, indices):
            return indices.tolist()

        def _forward_extend(self, x, forward_batch):
            indices = forward_batch.req_pool_indices.to(torch.long)
            host = self._host_indices(forward_batch, indices)
            seq_lens_cpu = forward_batch.extend_seq_lens_cpu
            prefix_lens_cpu = forward_batch.extend_prefix_lens_cpu
{body}
            return x

        def forward(self, x, forward_batch):
            if forward_batch.forward_mode.is_decode_or_idle():
                return x * 2
            return self._forward_extend(x, forward_batch)


    class CausalLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = ConvAttention()

        def forward(self, input_ids, positions, forward_batch):
            return self.attn(input_ids, forward_batch)


    EntryClass = CausalLM
"""

# zaya's CCA: fresh requests coalesced, else one request at a time. With no lengths the `and`
# stops at `bool(None)` and the loop over None raises; with lengths the generator over the
# prefix lengths (None) raises.
PER_REQUEST = """
all_fresh = bool(seq_lens_cpu) and not any(int(p) > 0 for p in prefix_lens_cpu)
if all_fresh:
    lens = [int(s) for s in seq_lens_cpu]
    x = x * len(lens) + host[0]
else:
    for i, n in enumerate(seq_lens_cpu):
        x = x + host[i] * n
"""
# Only the lengths are iterated: a draft-extend batch (a list) gets through.
LENGTHS_ONLY = """
for i, n in enumerate(seq_lens_cpu):
    x = x + host[i] * n
"""
# The same as PER_REQUEST, but a `try` may catch the raise.
CAUGHT = "try:" + textwrap.indent(PER_REQUEST, " " * 4) + "except TypeError:\n    x = x * 2\n"

SITE = ("conv_attention.py", "GL202", 8)  # indices.tolist(): a host sync


def _sites(root: Path, body: str, pyproject: str) -> set[tuple[str, str, int]]:
    files = {
        "sglang/__init__.py": "",
        "sglang/srt/__init__.py": "",
        "sglang/srt/models/__init__.py": "",
        "sglang/srt/models/conv_attention.py": LAYER.format(body=textwrap.indent(body.strip("\n"), " " * 12)),
    }
    root.mkdir(parents=True)
    files = {name: textwrap.dedent(text).lstrip("\n") for name, text in files.items()}
    _, report = lint_project(root, files, pyproject=pyproject)
    return {(f["path"].rsplit("/", 1)[-1], f["code"], f["line"]) for f in report["findings"]}


def test_a_path_that_raises_in_every_mode_that_reaches_it_is_not_captured(tmp_path: Path) -> None:
    """The extend path is reached in TARGET_VERIFY (no lengths: the loop over None raises) and in
    DRAFT_EXTEND (lengths: the generator over the prefix lengths, None, raises): its host sync,
    made before either raise, is no finding. Without the per-mode tables it is."""
    assert SITE in _sites(tmp_path / "without", PER_REQUEST, WITHOUT_MODES)
    for name, config in (("own", OWN), ("preset", SGLANG)):
        assert SITE not in _sites(tmp_path / name, PER_REQUEST, config), name


def test_a_mode_where_the_field_is_set_or_the_raise_is_caught_keeps_the_finding(tmp_path: Path) -> None:
    """Where the path only iterates the lengths, a draft-extend batch (a list) gets through it;
    where a ``try`` may catch the loop's raise, the path goes on: the host sync stays a finding."""
    for name, body in (("lengths", LENGTHS_ONLY), ("caught", CAUGHT)):
        for config_name, config in (("own", OWN), ("preset", SGLANG)):
            assert SITE in _sites(tmp_path / f"{name}-{config_name}", body, config), (name, config_name)


VERIFY = """
    import torch
    from torch import nn


    class VerifyHead(nn.Module):
        def _verify(self, x, forward_batch):
            with torch.no_grad():
                y = forward_batch.req_pool_indices.to(torch.long)
            for n in forward_batch.extend_seq_lens_cpu:
                y = y + n
            return y.tolist()

        def forward(self, input_ids, positions, forward_batch):
            if forward_batch.forward_mode.is_target_verify():
                return self._verify(input_ids, forward_batch)
            return input_ids


    EntryClass = VerifyHead
"""


def test_a_loop_over_a_field_none_in_the_callers_mode_ends_the_walk_there(tmp_path: Path) -> None:
    """The helper is walked in every mode; its loop over the lengths raises in TARGET_VERIFY only,
    the one mode its caller calls it in, so what follows the loop is never captured (without the
    per-mode tables it is)."""
    site = ("verify_head.py", "GL202", 11)
    files = {
        "sglang/__init__.py": "",
        "sglang/srt/__init__.py": "",
        "sglang/srt/models/__init__.py": "",
        "sglang/srt/models/verify_head.py": textwrap.dedent(VERIFY).lstrip("\n"),
    }
    calls = ('"forward_mode.is_decode_or_idle" = ["DECODE"]', '"forward_mode.is_target_verify" = ["TARGET_VERIFY"]')
    config, without = OWN.replace(*calls), WITHOUT_MODES.replace(*calls)
    for name, pyproject, expected in (("own", config, False), ("without", without, True)):
        root = tmp_path / name
        root.mkdir()
        _, report = lint_project(root, files, pyproject=pyproject)
        found = {(f["path"].rsplit("/", 1)[-1], f["code"], f["line"]) for f in report["findings"]}
        assert (site in found) is expected, name
