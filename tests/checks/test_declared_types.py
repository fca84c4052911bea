"""Parameters annotated with tensor and plain value classes only keep what such a class can be
(``declared_types.py``).

In vLLM a multimodal model reads its typed input dict (``image_input["pixel_values"]``, which the
walk writes as the dict itself) and hands it to a layer shared with every text model; shared, the
input schema came back out of that layer in every model that uses it, and was then handed on
through every decoder layer. Each test is a small project in that shape (written here), read
through ``graphlint check`` / ``graphlint regions``.
"""

from __future__ import annotations

import json
import textwrap
from contextlib import chdir
from pathlib import Path

from tests.checks.test_value_flow import regions
from tests.checks.conftest import run_cli

LAYERS = """
import torch
from torch import nn


class Op:
    \"\"\"One kernel op of a registry: calling it runs its implementation.\"\"\"

    def __init__(self, impl):
        self.impl = impl

    def __call__(self, *args):
        return self.impl(*args)


def rms_norm_impl(x, eps):
    return x


rms_norm = Op(rms_norm_impl)


class RMSNorm(nn.Module):
    def forward(self, x: {annotation}):
        return rms_norm(x, 1e-6)
"""

MODELS = """
import torch
from torch import nn

from layers import RMSNorm


class ImagePixelInputs:
    \"\"\"The pixel inputs of one request, checked against their shapes.\"\"\"

    def __init__(self, pixel_values):
        self.pixel_values = pixel_values

    def __getitem__(self, key):
        return getattr(self, key)

    def to(self, dtype):
        if self.pixel_values.sum().item() > 0:
            return self.pixel_values.to(dtype)
        return self.pixel_values


class VisionModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = RMSNorm()

    def forward(self, pixel_values):
        image_input = ImagePixelInputs(pixel_values)
        return self.norm(image_input["pixel_values"])


class TextModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = RMSNorm()

    @torch.compile
    def forward(self, hidden_states):
        hidden_states = self.norm(hidden_states)
        return hidden_states.to(torch.float32)


vision = VisionModel()
text = TextModel()
"""


def write(root: Path, annotation: str) -> dict[str, str]:
    return {"layers.py": LAYERS.replace("{annotation}", annotation), "models.py": MODELS}


def compiled_functions(tmp_path: Path, annotation: str) -> list[str]:
    (functions,) = [e["functions"] for e in regions(tmp_path, write(tmp_path, annotation)) if "models.TextModel.forward" in e["functions"]]
    return functions


def region_findings(root: Path, annotation: str) -> list[tuple[str, str, int]]:
    for name, text in write(root, annotation).items():
        (root / name).write_text(textwrap.dedent(text))
    (root / "pyproject.toml").write_text("")
    with chdir(root):
        status, out = run_cli("check", "--format", "json", "--no-cache", ".")
    assert status in (0, 1), out
    return [(f["code"], f["path"], f["line"]) for f in json.loads(out)["findings"] if f.get("region")]


def test_a_tensor_parameter_does_not_hand_an_input_schema_to_every_caller(tmp_path: Path) -> None:
    """``RMSNorm.forward(self, x: torch.Tensor)`` shared by a vision model (which hands it its
    input schema) and a compiled text model: the text model's ``hidden_states.to(...)`` is a
    tensor's, not the schema's ``to`` with its ``.item()``."""
    assert "models.ImagePixelInputs.to" not in compiled_functions(tmp_path, "torch.Tensor")
    assert region_findings(tmp_path, "torch.Tensor") == []


def test_the_forms_of_a_tensor_annotation_filter_alike(tmp_path: Path) -> None:
    for annotation in ("torch.Tensor | None", "Optional[torch.Tensor]", '"torch.Tensor"', "torch.FloatTensor"):
        files = write(tmp_path, annotation)
        files["layers.py"] = "from typing import Optional\n" + files["layers.py"]
        (functions,) = [e["functions"] for e in regions(tmp_path, files) if "models.TextModel.forward" in e["functions"]]
        assert "models.ImagePixelInputs.to" not in functions, annotation


def test_a_copy_per_receiver_class_filters_as_the_method_does(tmp_path: Path) -> None:
    """``RMSNorm`` with a subclass: its ``forward`` is analysed per receiver class
    (``receiver_copies.py``), and each copy's ``x`` keeps the annotation's filter."""
    files = write(tmp_path, "torch.Tensor")
    files["layers.py"] += "\n\nclass GemmaRMSNorm(RMSNorm):\n    pass\n"
    files["models.py"] = files["models.py"].replace("import RMSNorm", "import GemmaRMSNorm as RMSNorm")
    (functions,) = [e["functions"] for e in regions(tmp_path, files) if "models.TextModel.forward" in e["functions"]]
    assert "layers.RMSNorm.forward" in functions and "models.ImagePixelInputs.to" not in functions
    files["layers.py"] = files["layers.py"].replace("x: torch.Tensor", "x")
    (functions,) = [e["functions"] for e in regions(tmp_path, files) if "models.TextModel.forward" in e["functions"]]
    assert "models.ImagePixelInputs.to" in functions


def test_an_unannotated_or_wider_parameter_still_takes_every_value(tmp_path: Path) -> None:
    """No annotation, one that names a project class, or one with a subscripted part: the values
    flow as before (the schema's ``to`` and its ``.item()`` are reached)."""
    for annotation in ("object", "torch.Tensor | ImagePixelInputs", "torch.Tensor | list[torch.Tensor]"):
        files = write(tmp_path, annotation)
        if "ImagePixelInputs" in annotation:
            files["layers.py"] = "from models import ImagePixelInputs\n" + files["layers.py"]
        (functions,) = [e["functions"] for e in regions(tmp_path, files) if "models.TextModel.forward" in e["functions"]]
        assert "models.ImagePixelInputs.to" in functions, annotation
    files = write(tmp_path, "torch.Tensor")
    files["layers.py"] = files["layers.py"].replace("x: torch.Tensor", "x")
    (functions,) = [e["functions"] for e in regions(tmp_path, files) if "models.TextModel.forward" in e["functions"]]
    assert "models.ImagePixelInputs.to" in functions
    assert ("GL202", "models.py", 18) in region_findings(tmp_path, "object")
