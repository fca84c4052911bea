"""Which exported classes are roots: ``export-forward-parameters`` keeps the models a framework's
runner can run (sglang's runners hand ``forward`` a ``forward_batch``), not the vision towers a
module exports beside them."""

from __future__ import annotations

import json
import textwrap
from contextlib import chdir
from pathlib import Path

from tests.checks.conftest import lint_project, run_cli

# sglang's shape: the vision tower's forward takes pixels (and copies them to the device); the
# tower a module exports inherits it. The model's forward takes the runner's batch, as does one
# that inherits it from another module; a wrapper passes anything on (``**kwargs``).
FILES = {
    "python/sglang/__init__.py": "",
    "python/sglang/srt/models/tower.py": """
        import torch
        from torch import nn


        class VisionTower(nn.Module):
            def forward(self, pixel_values, image_sizes, output_hidden_states=False):
                pixels = pixel_values.to(device="npu")
                return pixels[pixels > 0]


        class LlavaForCausalLM(nn.Module):
            def forward(self, input_ids, positions, forward_batch):
                return input_ids[input_ids > 0]
    """,
    "python/sglang/srt/models/pixtral.py": """
        from torch import nn
        from sglang.srt.models.tower import LlavaForCausalLM, VisionTower


        class PixtralVisionModel(VisionTower):
            pass


        class PixtralForConditionalGeneration(LlavaForCausalLM):
            pass


        class PixtralWrapper(nn.Module):
            def forward(self, *args, **kwargs):
                return args[0][args[0] > 1]


        EntryClass = [PixtralForConditionalGeneration, PixtralVisionModel, PixtralWrapper]
    """,
}
EXPORTS = '[tool.graphlint]\npresets = []\n[tool.graphlint.capture-exports]\n"sglang.srt.models.*" = ["EntryClass"]\n'
PARAMETERS = '[tool.graphlint.export-forward-parameters]\n"sglang.srt.models.*" = ["forward_batch"]\n'


def _findings(tmp_path: Path, pyproject: str) -> set[tuple[str, int, str]]:
    files = {name: textwrap.dedent(text) for name, text in FILES.items()}
    _, report = lint_project(tmp_path, files, pyproject=pyproject)
    return {(f["path"].rpartition("/")[2], f["line"], f["code"]) for f in report["findings"]}


def test_an_exported_class_whose_forward_takes_no_runner_argument_is_no_root(tmp_path: Path) -> None:
    assert _findings(tmp_path, EXPORTS + PARAMETERS) == {("tower.py", 14, "GL202"), ("pixtral.py", 16, "GL202")}


def test_without_the_parameters_every_exported_class_is_a_root(tmp_path: Path) -> None:
    assert _findings(tmp_path, EXPORTS) == {
        ("tower.py", 8, "GL201"),
        ("tower.py", 9, "GL202"),
        ("tower.py", 14, "GL202"),
        ("pixtral.py", 16, "GL202"),
    }


def test_the_sglang_preset_keeps_its_models_and_drops_an_exported_vision_tower(tmp_path: Path) -> None:
    found = _findings(tmp_path, '[tool.graphlint]\npresets = ["sglang"]\n')
    assert ("tower.py", 14, "GL202") in found
    assert not {site for site in found if site[1] in (8, 9) and site[0] == "tower.py"}


def test_an_exported_class_that_is_no_root_is_named_by_the_coverage_line_and_regions(tmp_path: Path) -> None:
    """Dropping a root is said: the coverage line counts it and ``graphlint regions`` names it
    (text and JSON), so a model the runner cannot call does not look analysed."""
    _findings(tmp_path, EXPORTS + PARAMETERS)
    with chdir(tmp_path):
        _, text = run_cli("check", "--no-cache", ".")
        _, regions = run_cli("regions", ".")
        _, document = run_cli("regions", "--format", "json", ".")
    assert "1 exported class(es) whose forward the framework's runner cannot call (export-forward-parameters)" in text
    assert "pixtral.py:6: PixtralVisionModel is exported" in regions
    assert [(e["path"].rpartition("/")[2], e["line"], e["class"]) for e in json.loads(document)["unrun_exports"]] == [
        ("pixtral.py", 6, "PixtralVisionModel")
    ]
