"""What a helper returns for a capture batch decides its caller's branches (``returned_none.py``,
``none_returns.py``): sglang's vision-language models collect a batch's images in a helper that
returns ``None, None`` for a capture batch (its decode test returns early; in the other modes
its ``for ... in enumerate(forward_batch.mm_inputs)`` raises, mm_inputs being None), and run the
vision tower only under ``if pixel_values is not None ...``. A small project in sglang's module
layout, written here."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.checks.conftest import lint_project

SGLANG = '[tool.graphlint]\npresets = ["sglang"]\n'
EXPORTS = '[tool.graphlint]\npresets = []\n[tool.graphlint.capture-exports]\n"sglang.srt.models.*" = ["EntryClass"]\n'

# Each host sync is ``x[x > N]`` (GL202); its comment says whether a capture runs it.
MODEL = """
    import torch
    from torch import nn


    class VisionTower(nn.Module):
        def forward(self, pixel_values):
            return pixel_values[pixel_values > 1]  # not captured: reached only with images


    class Captioner(nn.Module):
        def __init__(self):
            super().__init__()
            self.visual = VisionTower()

        def _collect_images(self, forward_batch):
            if forward_batch.forward_mode.is_decode() or all(forward_batch.encoder_cached):
                return None, None
            features = []
            for i, mm_input in enumerate(forward_batch.mm_inputs):
                features.append(mm_input.feature)
            if not features:
                return None, None
            return torch.cat(features), len(features)

        def _image_lengths(self, forward_batch):
            if forward_batch.mm_inputs is None:
                return None
            return forward_batch.seq_lens

        def _decode_lengths(self, forward_batch):
            if forward_batch.forward_mode.is_decode():
                return forward_batch.seq_lens
            return None

        def rescale(self, positions, lengths):
            return positions[positions > 2]  # not captured: after `if lengths is None: return`

        def shift(self, positions, lengths):
            return positions[positions > 3]  # captured: the helper returns lengths in DECODE

        def forward(self, input_ids, positions, forward_batch):
            pixel_values, count = self._collect_images(forward_batch)
            if pixel_values is not None and count is not None:
                positions = positions + self.visual(pixel_values).sum()
                del pixel_values
            decode_lengths = self._decode_lengths(forward_batch)
            if decode_lengths is not None:
                positions = self.shift(positions, decode_lengths)
            lengths = self._image_lengths(forward_batch)
            if lengths is None:
                return positions
            return self.rescale(positions, lengths)


    EntryClass = Captioner
"""

# A subclass whose helper returns images whatever the batch: its copy of forward runs the tower.
SUBCLASS = """
    from sglang.srt.models.captioner import Captioner


    class EagerCaptioner(Captioner):
        def _collect_images(self, forward_batch):
            return forward_batch.pixel_values, 1


    EntryClass = EagerCaptioner
"""


def _files(*extra: tuple[str, str]) -> dict[str, str]:
    files = {"sglang/__init__.py": "", "sglang/srt/__init__.py": "", "sglang/srt/models/captioner.py": MODEL}
    return {name: textwrap.dedent(text) for name, text in (*files.items(), *extra)}


def _lines(marker: str) -> set[int]:
    return {n for n, line in enumerate(textwrap.dedent(MODEL).splitlines(), 1) if f"# {marker}" in line}


def _found(root: Path, files: dict[str, str], pyproject: str) -> set[tuple[str, int]]:
    root.mkdir(parents=True)
    _, report = lint_project(root, files, pyproject=pyproject)
    assert all(f["code"] == "GL202" for f in report["findings"]), report["findings"]
    return {(f["path"].rsplit("/", 1)[-1], f["line"]) for f in report["findings"]}


def test_a_helper_that_returns_none_for_a_capture_batch_decides_its_callers_branches(tmp_path: Path) -> None:
    found = _found(tmp_path / "preset", _files(), SGLANG)
    assert found == {("captioner.py", line) for line in _lines("captured")}
    # without the capture knowledge every branch is captured
    bare = _found(tmp_path / "bare", _files(), EXPORTS)
    assert bare == {("captioner.py", line) for line in _lines("captured") | _lines("not captured")}


def test_a_subclass_whose_helper_returns_a_value_keeps_its_calls(tmp_path: Path) -> None:
    # EagerCaptioner's copy of forward runs its own _collect_images: the tower is captured there
    found = _found(tmp_path / "preset", _files(("sglang/srt/models/eager.py", SUBCLASS)), SGLANG)
    tower = min(_lines("not captured"))
    assert found == {("captioner.py", line) for line in _lines("captured") | {tower}}


def test_a_name_the_file_rebinds_is_no_builtin(tmp_path: Path) -> None:
    # the module's own `enumerate` may take None: the loop may run, and the helper return images
    # (past a test the capture does not decide: `all(forward_batch.encoder_cached)` raises)
    shadowed = MODEL.replace("class VisionTower", "def enumerate(items):\n        return []\n\n\n    class VisionTower")
    shadowed = shadowed.replace("all(forward_batch.encoder_cached)", "forward_batch.encoder_done")
    files = _files(("sglang/srt/models/captioner.py", shadowed))
    found = _found(tmp_path / "preset", files, SGLANG)
    lines = textwrap.dedent(shadowed).splitlines()
    assert any("pixel_values[pixel_values > 1]" in lines[line - 1] for _, line in found)
