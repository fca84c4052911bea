"""The dynamo repro's cut of the user's code takes what the target uses from the project's other
files, whatever the import form, and imports none of them: the cut code runs on its own."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from graphlint.tracer.repro.source import cut

PROJECT = Path(__file__).resolve().parent / "targets" / "helpers_project"


@pytest.mark.parametrize(
    ("root", "helper"),
    [
        ("ClampedHead", "def clamp_if_large("),  # import layers.checks as checks
        ("TaggedHead", "def batch_tag("),  # from .shapes import batch_tag
        ("CountedHead", "def batch_tag("),  # from layers import shapes
    ],
)
def test_the_cut_holds_the_helpers_and_runs_without_the_project(root: str, helper: str) -> None:
    code = cut(PROJECT / "layers" / "model.py", [root], set()).code()
    assert helper in code and "layers" not in code and "from .shapes" not in code
    namespace: dict[str, object] = {"__name__": "cut"}
    exec(compile(code, "<cut>", "exec"), namespace)  # noqa: S102 - the project's code, as cut
    torch.manual_seed(0)
    model = namespace[root]()
    assert model(torch.randn(3, 8)).shape == (3, 8)


def test_a_library_import_stays_an_import() -> None:
    result = cut(PROJECT / "layers" / "model.py", ["ClampedHead"], set())
    assert "import torch" in result.imports and "from torch import nn" in result.imports
