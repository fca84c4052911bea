"""Sequences empty in every capture (``empty_values.py``): sglang's audio and vision models build,
for a batch that is not a decode one, a list of the requests' inputs from
``forward_batch.mm_inputs`` (None in every capture batch) or ``[]``, append the features to encode
only in a loop over it, and run the encoder under ``if features:``. A small project in sglang's
module layout, written here."""

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


    def fill(into, inputs):
        into.append(len(inputs))


    class AudioEncoder(nn.Module):
        def forward(self, features):
            return features[features > 1]  # not captured: reached only with audio


    class Transcriber(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = AudioEncoder()

        def forward(self, input_ids, positions, forward_batch):
            if not forward_batch.forward_mode.is_decode():
                mm_inputs_list = forward_batch.mm_inputs if forward_batch.mm_inputs else []
                cached_list = forward_batch.encoder_cached if forward_batch.encoder_cached else []
                features = []
                for mm_input, cached in zip(mm_inputs_list, cached_list):
                    if cached:
                        continue
                    features.append(mm_input.feature)
                    positions = positions[positions > 2]  # not captured: a loop over nothing
                else:
                    positions = positions[positions > 3]  # captured: the loop's else
                if features:
                    positions = positions + self.encoder(torch.cat(features)).sum()
                if not features:
                    positions = positions[positions > 4]  # captured: no features
                sizes = [mm_input.size for mm_input in mm_inputs_list if mm_input is not None]
                if sizes:
                    positions = positions[positions > 6]  # not captured: a comprehension over nothing
                extra = []
                fill(extra, mm_inputs_list)
                if extra:
                    positions = positions[positions > 7]  # captured: handed to a call, which may fill it
                lengths = []
                lengths.append(positions.shape[0])
                if lengths:
                    positions = positions[positions > 5]  # captured: appended to in a capture
            return positions


    EntryClass = Transcriber
"""


def _lines(marker: str) -> set[int]:
    return {n for n, line in enumerate(textwrap.dedent(MODEL).splitlines(), 1) if f"# {marker}" in line}


def _found(root: Path, pyproject: str) -> set[int]:
    root.mkdir(parents=True)
    files = {"sglang/__init__.py": "", "sglang/srt/__init__.py": "", "sglang/srt/models/transcriber.py": MODEL}
    _, report = lint_project(root, {k: textwrap.dedent(v) for k, v in files.items()}, pyproject=pyproject)
    assert all(f["code"] == "GL202" for f in report["findings"]), report["findings"]
    return {f["line"] for f in report["findings"]}


def test_a_list_built_only_from_what_a_capture_batch_lacks_is_empty_there(tmp_path: Path) -> None:
    assert _found(tmp_path / "preset", SGLANG) == _lines("captured")
    # without the capture knowledge every branch is captured
    assert _found(tmp_path / "bare", EXPORTS) == _lines("captured") | _lines("not captured")


# sglang's CLIP embedding model: its requests' images, flattened (``empty-of-empty-calls``), from
# ``mm_inputs``, bound ``[]`` and rebound only in a branch no capture takes.
FLATTENING_MODEL = """
    import torch
    from torch import nn

    from sglang.srt.utils import flatten_nested_list


    class Embedder(nn.Module):
        def forward(self, input_ids, positions, forward_batch):
            mm_inputs = []
            if forward_batch.mm_inputs is not None:
                mm_inputs = forward_batch.mm_inputs
            features = [item.feature for item in flatten_nested_list([m.items for m in mm_inputs if m is not None])]
            if len(features) != 0:
                positions = positions[positions > 1]  # not captured: no images in a capture
            if len(features) == 0:
                positions = positions[positions > 2]  # captured: no images
            if len(features) > 0:
                positions = positions[positions > 3]  # not captured: no images in a capture
            packed = flatten_nested_list(tuple(m.items for m in mm_inputs))
            if len(packed) != 0:
                positions = positions[positions > 4]  # captured: an empty tuple flattens to [()]
            sizes = []
            if positions.shape[0] > 8:
                sizes = [positions.shape[0]]
            if len(sizes) != 0:
                positions = positions[positions > 5]  # captured: rebound where a capture may run
            return positions


    EntryClass = Embedder
"""

FLATTEN = """
    def flatten_nested_list(nested_list):
        if isinstance(nested_list, list):
            return [item for sublist in nested_list for item in flatten_nested_list(sublist)]
        return [nested_list]
"""


def test_a_list_flattened_from_an_empty_one_is_empty_and_its_length_decides_tests(tmp_path: Path) -> None:
    files = {
        "sglang/__init__.py": "",
        "sglang/srt/__init__.py": "",
        "sglang/srt/utils/__init__.py": "from sglang.srt.utils.common import *\n",
        "sglang/srt/utils/common.py": FLATTEN,
        "sglang/srt/models/embedder.py": FLATTENING_MODEL,
    }
    lines = {n: line for n, line in enumerate(textwrap.dedent(FLATTENING_MODEL).splitlines(), 1)}
    captured = {n for n, line in lines.items() if "# captured" in line}
    found = {}
    for name, pyproject in (("preset", SGLANG), ("bare", EXPORTS)):
        (tmp_path / name).mkdir()
        _, report = lint_project(tmp_path / name, {k: textwrap.dedent(v) for k, v in files.items()}, pyproject=pyproject)
        found[name] = {f["line"] for f in report["findings"] if f["code"] == "GL202"}
    assert found["preset"] == captured
    assert found["bare"] == captured | {n for n, line in lines.items() if "# not captured" in line}
