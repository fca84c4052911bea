"""Compile entry points a framework replaces with a plain call (``replaced-entrypoints``).

MindSpeed patches ``torch.compile`` with its ``dummy_compile`` whenever its Megatron adaptor is
imported (a level-0 feature: always on), so in MindSpeed-LLM ``@torch.compile`` compiles
nothing. The project below is in MindSpeed-LLM's shape (a package that imports the adaptor, a
fused kernel decorated with ``torch.compile``, written here). With the preset the decorated
function is no region and the coverage says why; without it, the same code is a compiled region.
"""

from __future__ import annotations

import json
import textwrap
from contextlib import chdir
from pathlib import Path

from tests.checks.conftest import found, lint_project, run_cli

FILES = {
    "mindspeed_llm/__init__.py": "from mindspeed_llm.tasks import megatron_adaptor\n",
    "mindspeed_llm/tasks/__init__.py": "",
    "mindspeed_llm/tasks/megatron_adaptor.py": "import mindspeed.megatron_adaptor\n",
    "mindspeed_llm/tasks/fusions.py": textwrap.dedent("""\
        import torch


        @torch.compile
        def weighted_swiglu(x, weights):
            scale = weights.max().item()
            return x * scale


        @torch.compile
        def fused_mlp(x, weights):
            return weighted_swiglu(x, weights) * 2


        def apply(x, weights):
            return torch.compile(fused_mlp)(x, weights)
    """),
}
INNER_DECORATOR, ITEM_LINE, OUTER_DECORATOR, COMPILE_CALL = 4, 6, 10, 16


def test_mindspeed_replaces_torch_compile_with_a_plain_call(tmp_path: Path) -> None:
    status, report = lint_project(tmp_path, FILES)
    assert report["summary"]["presets"] == ["mindspeed"]
    assert report["findings"] == [] and status == 0  # no GL202 in it, no GL101 for the nesting
    with chdir(tmp_path):
        _, text = run_cli("check", "--no-cache", ".")
        _, listing = run_cli("regions", "--no-cache", "--format", "json", ".")
    assert "3 compile call(s) the framework replaces with a plain call (replaced-entrypoints): no region" in text
    assert "Regions: 0 compiled, 0 capture entry point(s)" in text
    entries = json.loads(listing)["entries"]
    assert [(e["line"], e["replaced"], e["functions"]) for e in entries] == [
        (line, True, []) for line in (INNER_DECORATOR, OUTER_DECORATOR, COMPILE_CALL)
    ]


def test_without_the_preset_the_same_code_is_a_compiled_region(tmp_path: Path) -> None:
    status, report = lint_project(tmp_path, FILES, pyproject="[tool.graphlint]\npresets = []\n")
    # The inner decorator is reached from the outer compiled function: dynamo inlines it there
    # (no GL101), and the .item() it traces is a finding.
    assert found(report) == {("GL202", ITEM_LINE)} and status == 1


def test_a_project_can_name_its_own_replaced_entry_points(tmp_path: Path) -> None:
    """The same key in ``[tool.graphlint]``: a configured compile decorator the project's own
    launcher turns off."""
    files = {
        "app.py": textwrap.dedent("""\
            import torch
            from mylib import jit


            @jit
            def step(x):
                return x.sum().item()
        """),
    }
    pyproject = '[tool.graphlint]\ncompile-entrypoints = ["mylib.jit"]\n'
    assert found(lint_project(tmp_path, files, pyproject=pyproject)[1]) == {("GL202", 7)}
    pyproject += 'replaced-entrypoints = ["mylib.jit"]\n'
    assert lint_project(tmp_path, files, pyproject=pyproject)[1]["findings"] == []
