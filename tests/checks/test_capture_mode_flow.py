"""Capture modes carried across calls (``returning_calls.py``, ``mode_flow.py``): what a function
runs after a call that returns only in some modes runs only in those, and a callee is entered
only in the modes its caller makes the call in. A small project in sglang's shape (a
multimodal model whose helper returns at once in DECODE and otherwise iterates
``forward_batch.encoder_cached``, None in every capture batch), written here."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.checks.conftest import lint_project

# Each host sync is ``x[x > N]`` (GL202); the comment says whether a capture runs it.
MODEL = """
    import torch
    from torch import nn


    class CrossAttentionVLForConditionalGeneration(nn.Module):
        def _collect_mm_data(self, forward_batch):
            if forward_batch.forward_mode.is_decode() or all(forward_batch.encoder_cached):
                return None, None
            features = torch.cat([item.feature for item in forward_batch.mm_inputs])
            return features, None

        def _row_mask(self, forward_batch):
            if forward_batch.forward_mode.is_decode():
                return forward_batch.encoder_lens != 0
            lens = forward_batch.seq_lens
            return lens[lens > 1]  # not captured: entered in DECODE only

        def _text_mask(self, forward_batch):
            if forward_batch.forward_mode.is_decode():
                return forward_batch.encoder_lens != 0
            lens = forward_batch.seq_lens
            return lens[lens > 2]  # captured: entered before the helper, in every mode

        def forward(self, input_ids, positions, forward_batch):
            text_mask = self._text_mask(forward_batch)
            pixel_values, grid_thw = self._collect_mm_data(forward_batch)
            row_mask = self._row_mask(forward_batch)
            if forward_batch.forward_mode.is_target_verify():
                positions = positions[positions > 3]  # not captured: only DECODE gets here
            return input_ids * row_mask * text_mask


    EntryClass = CrossAttentionVLForConditionalGeneration
"""

FILES = {
    "python/sglang/__init__.py": "",
    "python/sglang/srt/models/cross_vl.py": MODEL,
}


def _lines(marker: str) -> set[int]:
    return {n for n, line in enumerate(textwrap.dedent(MODEL).splitlines(), 1) if f"# {marker}" in line}


def test_modes_narrow_after_a_helper_that_raises_in_the_others_and_enter_the_next_callee(tmp_path: Path) -> None:
    files = {name: textwrap.dedent(text) for name, text in FILES.items()}
    _, report = lint_project(tmp_path, files, pyproject='[tool.graphlint]\npresets = ["sglang"]\n')
    assert {f["code"] for f in report["findings"]} == {"GL202"}, report["findings"]
    assert {f["line"] for f in report["findings"]} == _lines("captured")
    assert _lines("not captured")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # encoder_flags is not known None: the helper may return in every mode
        ("all(forward_batch.encoder_cached)", "all(forward_batch.encoder_flags)"),
        # a decorator may catch what the helper raises
        ("    def _collect_mm_data", "    @retry_on_error\n        def _collect_mm_data"),
        # a generator's call returns before its body runs
        ("return features, None", "yield features"),
    ],
)
def test_a_helper_that_may_return_in_every_mode_narrows_nothing(tmp_path: Path, old: str, new: str) -> None:
    assert old in MODEL
    model = MODEL.replace(old, new)
    files = {"python/sglang/__init__.py": "", "python/sglang/srt/models/cross_vl.py": textwrap.dedent(model)}
    _, report = lint_project(tmp_path, files, pyproject='[tool.graphlint]\npresets = ["sglang"]\n')
    lines = textwrap.dedent(model).splitlines()
    marked = {n for n, line in enumerate(lines, 1) if "# captured" in line or "# not captured" in line}
    assert {f["line"] for f in report["findings"]} == marked
