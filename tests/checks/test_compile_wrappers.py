"""``torch.compile(f)`` compiles the wrapper it returns, not ``f`` (issue #13): a call of ``f`` by
its own name runs it eagerly, a call of the wrapper runs it compiled (``compile_wrappers.py``)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.checks.conftest import lint_project


def _lint(tmp_path: Path, files: dict[str, str]) -> list[dict[str, Any]]:
    _, report = lint_project(tmp_path, {k: textwrap.dedent(v).lstrip("\n") for k, v in files.items()})
    return report["findings"]


def _sites(findings: list[dict[str, Any]]) -> set[tuple[str, str, int]]:
    return {(f["path"].rsplit("/", 1)[-1], f["code"], f["line"]) for f in findings}


# A serving framework's shape: a rotary layer keeps a compiled copy of a plain helper on itself
# (``self._rope = torch.compile(dynamic=True)(apply_rope)``), another layer calls the helper by
# its name; the model runner captures the model eagerly inside an NPU graph.
ROPE = """
    import torch
    from torch import nn


    def scaled(x):
        return x * 2


    @torch.compile(dynamic=True)
    def fused_scale(x):
        return x * 3


    def apply_rope(x, cos):
        return scaled(x) * cos + fused_scale(x)


    class CompiledRope(nn.Module):
        def __init__(self):
            super().__init__()
            self._rope = torch.compile(dynamic=True)(apply_rope)

        def forward(self, x, cos):
            return self._rope(x, cos)


    class PlainRope(nn.Module):
        def forward(self, x, cos):
            return apply_rope(x, cos)


    def warm_up(x, cos):
        rope = CompiledRope()
        return rope(x, cos)
"""


def _model(rope_class: str) -> str:
    return f"""
        import torch
        from torch import nn

        from serve.rope import {rope_class}, warm_up


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.rope = {rope_class}()

            def forward(self, x, cos):
                return self.rope(x, cos)


        class GraphRunner:
            def __init__(self):
                self.model = Model()
                self.graph = torch.npu.NPUGraph()

            def capture(self, x, cos):
                warm_up(x, cos)
                with torch.npu.graph(self.graph):
                    return self.model(x, cos)
    """


def test_a_helper_called_by_its_own_name_under_capture_is_not_its_wrapper(tmp_path: Path) -> None:
    """The captured model calls ``apply_rope`` itself, eagerly; its wrapper runs only in the
    eager warm-up: no nested compile at the ``torch.compile`` call. The decorated helper the
    eager ``apply_rope`` calls compiles on its own inside the capture: nested (before, the
    plain ``apply_rope`` counted as compiled and hid it)."""
    findings = _lint(tmp_path, {"serve/__init__.py": "", "serve/rope.py": ROPE, "serve/model.py": _model("PlainRope")})
    assert ("rope.py", "GL101", 21) not in _sites(findings)
    assert ("rope.py", "GL101", 9) in _sites(findings)


def test_a_wrapper_called_under_capture_is_a_nested_compile_through_its_call(tmp_path: Path) -> None:
    """``self._rope(x, cos)`` under the capture runs the compiled wrapper: nested, with a chain
    that enters ``apply_rope`` at the wrapper's call; the decorated helper ``apply_rope`` calls
    is traced with it there (dynamo inlines it): not nested."""
    findings = _lint(tmp_path, {"serve/__init__.py": "", "serve/rope.py": ROPE, "serve/model.py": _model("CompiledRope")})
    assert ("rope.py", "GL101", 9) not in _sites(findings)
    nested = [f for f in findings if f["code"] == "GL101" and f["line"] == 21]
    assert len(nested) == 1
    assert nested[0]["region"]["chain"][-2:] == ["CompiledRope.forward", "apply_rope"]


# The decorator form rebinds the name: every call of it is the compiled function's.
DECORATED = {
    "serve/__init__.py": "",
    "serve/model.py": """
        import torch
        from torch import nn


        @torch.compile(dynamic=True)
        def apply_rope(x):
            return x * 2


        class Model(nn.Module):
            def forward(self, x):
                return apply_rope(x)


        class GraphRunner:
            def __init__(self):
                self.model = Model()
                self.graph = torch.npu.NPUGraph()

            def capture(self, x):
                with torch.npu.graph(self.graph):
                    return self.model(x)
    """,
}


def test_the_decorator_form_is_the_compiled_function_by_its_name(tmp_path: Path) -> None:
    """Unchanged: the capture calls ``apply_rope`` by its name, which is the compiled function."""
    assert ("model.py", "GL101", 5) in _sites(_lint(tmp_path, DECORATED))


@pytest.mark.parametrize(
    "compiled",
    [
        "torch.compile(model=apply_rope, dynamic=True)",
        "torch.compile(dynamic=True)(model=apply_rope)",
        "torch._dynamo.optimize('inductor')(fn=apply_rope)",
    ],
)
def test_a_target_handed_by_keyword_is_compiled_and_its_wrapper_runs_it(tmp_path: Path, compiled: str) -> None:
    """``torch.compile(model=f)`` is the call form with its target by keyword: an entry whose
    wrapper, called under the capture, is a nested compile through that call (before, it was
    no entry at all, and its wrapper ran nothing)."""
    rope = ROPE.replace("torch.compile(dynamic=True)(apply_rope)", compiled)
    findings = _lint(tmp_path, {"serve/__init__.py": "", "serve/rope.py": rope, "serve/model.py": _model("CompiledRope")})
    nested = [f for f in findings if f["code"] == "GL101" and f["line"] == 21]
    assert len(nested) == 1
    assert nested[0]["region"]["chain"][-2:] == ["CompiledRope.forward", "apply_rope"]
