"""Where code runs: compiled and capture regions across import forms, modules and files."""

from __future__ import annotations

import json
import textwrap
from contextlib import chdir
from pathlib import Path

import pytest

from tests.checks.conftest import check_json, found, lint_project, run_cli


def _lint(tmp_path: Path, code: str, *args: str, pyproject: str = "", more: dict[str, str] | None = None):
    files = {"app.py": textwrap.dedent(code)}
    files.update({name: textwrap.dedent(text) for name, text in (more or {}).items()})
    return lint_project(tmp_path, files, *args, pyproject=pyproject)


@pytest.mark.parametrize(
    ("imports", "decorator"),
    [
        ("import torch", "@torch.compile(mode='reduce-overhead')"),
        ("import torch as t", "@t.compile(mode='reduce-overhead')"),
        ("from torch import compile", "@compile(mode='reduce-overhead')"),
        ("from torch import compile as jit", "@jit(mode='reduce-overhead')"),
        ("import torch._dynamo", "@torch._dynamo.optimize('cudagraphs')"),
        ("import torch", "@torch.compile(backend='npugraph_ex')"),
    ],
    ids=["torch", "alias", "from-import", "from-import-as", "dynamo-optimize", "npugraph-ex"],
)
def test_capture_entry_under_every_import_form(tmp_path: Path, imports: str, decorator: str) -> None:
    status, report = _lint(tmp_path, f"""
        import torch
        {imports}

        {decorator}
        def step(x):
            return x.sum().item()
    """)
    assert found(report) == {("GL202", 7)}
    (finding,) = report["findings"]
    assert finding["severity"] == "error"
    assert finding["region"] == {
        "kind": "capture", "entry": "app.py:5", "chain": ["step"],
        "steps": [{"function": "step", "path": "app.py", "line": 6}],  # the compiled function's ``def``
    }


@pytest.mark.parametrize(
    "wrap",
    [
        "torch.compile(mode='reduce-overhead')(step)",
        "torch._dynamo.optimize('cudagraphs')(step)",
        "torch.compile(step, options={'triton.cudagraphs': True}, mode='reduce-overhead')",
        "torchair.inference.cache_compile(step, config=config)",
    ],
    ids=["compile-factory", "optimize-factory", "compile-call", "cache-compile"],
)
def test_capture_entry_by_call(tmp_path: Path, wrap: str) -> None:
    _, report = _lint(tmp_path, f"""
        import torch
        import torchair

        config = torchair.CompilerConfig()
        config.mode = "reduce-overhead"

        def step(x):
            return x.sum().item()

        fast = {wrap}
    """)
    assert [(f["code"], f["line"], f["region"]["kind"]) for f in report["findings"]] == [("GL202", 9, "capture")]


def test_plain_compile_is_a_compiled_region_with_warnings(tmp_path: Path) -> None:
    _, report = _lint(tmp_path, """
        import torch

        def step(x):
            return x.sum().item()

        fast = torch.compile(step)
    """)
    (finding,) = report["findings"]
    assert (finding["code"], finding["severity"], finding["region"]["kind"]) == ("GL202", "warning", "compiled")


def test_module_instance_reaches_submodules(tmp_path: Path) -> None:
    _, report = _lint(tmp_path, """
        import torch
        from torch import nn

        class Mlp(nn.Module):
            def forward(self, x):
                return x * torch.ones(4)

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.mlp = nn.Sequential(Mlp(), nn.ReLU())
                self.attn = Attn()

            def forward(self, x):
                return self.norm(self.mlp(x)) + self.attn(x)

            def norm(self, x):
                return x / x.sum().item()

        class Attn(nn.Module):
            def forward(self, x):
                return x[x > 0]

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Block() for _ in range(2)])

            def forward(self, x):
                for i, layer in enumerate(self.layers):
                    x = layer(x)
                return x

        model = Model()
        model.compile(mode="reduce-overhead")
    """)
    chains = {(f["code"], f["line"]): f["region"]["chain"] for f in report["findings"]}
    assert chains == {
        ("GL203", 7): ["Model.forward", "Block.forward", "Mlp.forward"],
        ("GL202", 19): ["Model.forward", "Block.forward", "Block.norm"],
        ("GL202", 23): ["Model.forward", "Block.forward", "Attn.forward"],
    }
    assert {f["region"]["entry"] for f in report["findings"]} == {"app.py:36"}


def test_torchair_config_flow_makes_a_capture_region(tmp_path: Path) -> None:
    _, report = _lint(tmp_path, """
        import torch
        from torch_npu.dynamo import torchair as tng
        from torchair.configs.compiler_config import CompilerConfig

        def step(x):
            return x.tolist()

        def build():
            config = CompilerConfig()
            config.mode = "reduce-overhead"
            backend = tng.get_npu_backend(compiler_config=config)
            return torch.compile(step, backend=backend)

        def graph_mode():
            config = CompilerConfig()
            config.mode = "max-autotune"
            return torch.compile(step, backend=tng.get_npu_backend(compiler_config=config))

        plain = torch.compile(step, backend=tng.get_npu_backend())
    """)
    kinds = {f["region"]["entry"]: f["region"]["kind"] for f in report["findings"]}
    # The finding sits in `step`; the capture entry wins over the two compiled ones.
    assert found(report) == {("GL202", 7)}
    assert kinds == {"app.py:13": "capture"}


def test_capture_blocks_and_capture_begin_end(tmp_path: Path) -> None:
    _, report = _lint(tmp_path, """
        import torch

        def fill(buf):
            return buf.copy_(torch.zeros(4))

        def run(g, buf, x):
            y = x.item()
            with torch.cuda.graph(g):
                fill(buf)
            g.capture_begin()
            z = x.tolist()
            g.capture_end()
            w = x.tolist()
            graphed = torch.cuda.make_graphed_callables(fill, (buf,))
            return y, z, w, graphed
    """)
    assert found(report) == {("GL201", 5), ("GL203", 5), ("GL202", 12)}
    by_line = {f["line"]: f["region"] for f in report["findings"]}
    assert by_line[12] == {
        "kind": "capture", "entry": "app.py:11", "chain": ["run"],
        "steps": [{"function": "run", "path": "app.py", "line": 11}],  # the block itself
    }
    # fill runs under two capture entries; the shorter chain (make_graphed_callables) is shown.
    assert by_line[5] == {
        "kind": "capture", "entry": "app.py:15", "chain": ["fill"],
        "steps": [{"function": "fill", "path": "app.py", "line": 4}],
    }


def test_region_boundaries_stop_dynamo_but_not_eager_capture(tmp_path: Path) -> None:
    _, report = _lint(tmp_path, """
        import torch

        @torch.compiler.disable
        def log_stats(x):
            return x.mean().item()

        @torch._dynamo.disable
        def debug(x):
            print(x.tolist())

        def helper(x):
            return x.max().item()

        @torch.compile(mode="reduce-overhead")
        def step(x):
            log_stats(x)
            debug(x)
            if torch.compiler.is_compiling():
                y = x * 2
            else:
                y = helper(x) + x.sum().item()
            if not torch._dynamo.is_compiling():
                x.cpu()
            return y

        @torch.compile
        def fast_path(x):
            if torch.compiler.is_compiling():
                return x * 2
            return x.sum().item() * x

        def capture(g, x):
            with torch.npu.graph(g):
                log_stats(x)
    """)
    # Only the eager capture block sees log_stats: the compiled step skips both boundaries and
    # both eager branches, and fast_path what follows its compiling-only early return.
    assert found(report) == {("GL202", 6)}
    (finding,) = report["findings"]
    assert finding["region"]["chain"] == ["capture", "log_stats"]


@pytest.mark.parametrize(
    ("imports", "test", "expected"),
    [
        ("from ..utils import is_torchdynamo_compiling", "is_torchdynamo_compiling()", {("GL202", 9)}),
        ("from ..utils import is_torchdynamo_compiling as compiling", "compiling()", {("GL202", 9)}),
        ("from .. import utils", "utils.is_torchdynamo_compiling()", {("GL202", 9)}),
        ("from ..utils.import_utils import is_compiling", "is_compiling()", {("GL202", 9)}),
        ("from pkg.utils.import_utils import is_compiling", "is_compiling()", {("GL202", 9)}),
        ("from ..utils import is_tracing", "is_tracing(x)", {("GL202", 9)}),
        ("from ..utils import is_training", "is_training()", {("GL202", 8), ("GL202", 9)}),
    ],
    ids=[
        "from-relative", "from-relative-as", "relative-module", "deeper-module", "own-helper",
        "transformers-is-tracing", "other-function",
    ],
)
def test_is_compiling_imported_relatively_marks_the_eager_branch(
    tmp_path: Path, imports: str, test: str, expected: set[tuple[str, int]]
) -> None:
    """A package's own code imports the check relatively, as every transformers model does, or
    wraps torch's in a helper of the same name."""
    helpers = "import torch\n\ndef is_torchdynamo_compiling():\n    return torch.compiler.is_compiling()\n"
    files = {
        "pkg/__init__.py": "",
        "pkg/utils/__init__.py": helpers + "\ndef is_tracing(x=None):\n    return is_torchdynamo_compiling()\n"
        + "\ndef is_training():\n    return False\n",
        "pkg/utils/import_utils.py": helpers.replace("is_torchdynamo_compiling", "is_compiling"),
        "pkg/models/__init__.py": "",
        "pkg/models/gpt.py": textwrap.dedent(f"""
            import torch
            {imports}

            @torch.compile(mode="reduce-overhead")
            def step(x):
                if not {test}:
                    print(x.sum().item())
                return x.max().item()
            """),
    }
    _, report = lint_project(tmp_path, files, "--select", "GL202")
    assert found(report) == expected
    assert {f["path"] for f in report["findings"]} == {"pkg/models/gpt.py"}


@pytest.mark.parametrize(
    ("imports", "test", "expected"),
    [
        # transformers' guard: while compiling the mask is never read and the body never runs.
        ("from transformers.utils import is_tracing", "not is_tracing(x) and (x > 0).all()", set()),
        ("from ...utils import is_torchdynamo_compiling", "not is_torchdynamo_compiling() and x.any()", set()),
        ("import torch", "torch.compiler.is_compiling() or x.any()", {("GL202", 8)}),
        ("import torch", "x.any() and not torch.compiler.is_dynamo_compiling()", {("GL105", 7)}),
        ("from torch.compiler import is_compiling as compiling", "not (compiling() or x.any())", set()),
        # True only under torch.jit.trace / torch.fx / torch.export: dynamo reads the mask.
        ("import torch", "not torch.jit.is_tracing() and x.any()", {("GL105", 7), ("GL202", 8)}),
        ("from torch.jit import is_tracing", "not is_tracing() and x.any()", {("GL105", 7), ("GL202", 8)}),
        ("import torch.fx._symbolic_trace as st", "not st.is_fx_tracing() and x.any()", {("GL105", 7), ("GL202", 8)}),
        ("import torch", "not torch.compiler.is_exporting() and x.any()", {("GL105", 7), ("GL202", 8)}),
    ],
    ids=[
        "transformers-is-tracing-and", "relative-and", "compiling-or", "check-on-the-right",
        "not-or", "jit-is-tracing", "jit-imported-bare", "fx-tracing", "exporting",
    ],
)
def test_compile_checks_by_meaning_in_compound_conditions(
    tmp_path: Path, imports: str, test: str, expected: set[tuple[str, int]]
) -> None:
    """A check ends the region only where it is True under torch.compile, and a compound test
    short-circuits: what follows ``not is_tracing(x) and`` is never evaluated while compiling."""
    files = {
        "app.py": textwrap.dedent(f"""
            import torch
            {imports}

            @torch.compile
            def step(x):
                if {test}:
                    print(x.sum().item())
                return x
            """),
    }
    _, report = lint_project(tmp_path, files, "--select", "GL105,GL202")
    assert found(report) == expected


def test_compile_check_in_a_conditional_expression(tmp_path: Path) -> None:
    files = {
        "app.py": textwrap.dedent("""
            import torch

            @torch.compile
            def step(x):
                y = x * 2 if torch.compiler.is_compiling() else x.sum().item()
                z = x.max().item() if not torch.compiler.is_compiling() else x
                return y, z
            """),
    }
    _, report = lint_project(tmp_path, files, "--select", "GL202")
    assert found(report) == set()


NET = """
import torch
from torch import nn

class Net(nn.Module):
    def forward(self, x):
        return x.sum().item()
"""


@pytest.mark.parametrize(
    ("factory", "use"),
    [
        ("def build():\n    return Net()", "model = build()\ncompiled = torch.compile(model, mode='reduce-overhead')"),
        ("def build():\n    return Net()", "compiled = torch.compile(build(), mode='reduce-overhead')"),
        ("def build():\n    net = Net()\n    return net", "compiled = torch.compile(build(), mode='reduce-overhead')"),
        ("def build():\n    return nn.Sequential(Net(), nn.ReLU())", "compiled = build().compile(mode='reduce-overhead')"),
        ("def inner():\n    return Net()\n\ndef build():\n    return inner()", "compiled = torch.compile(build(), mode='reduce-overhead')"),
        (
            "def build():\n    return Net()\n\nclass Wrapper(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.model = build()\n\n    def forward(self, x):\n"
            "        return self.model(x)",
            "compiled = torch.compile(Wrapper(), mode='reduce-overhead')",
        ),
        (  # resolved from b first: its own cycle through a must not hide Net
            "def a(n):\n    if n:\n        return b(n - 1)\n    return Net()\n\n"
            "def b(n):\n    if n > 3:\n        return a(n)\n    return b(n - 1)",
            "compiled = torch.compile(b(5), mode='reduce-overhead')",
        ),
        (
            "class Wrapper(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.model = self.build()\n\n    def build(self):\n        return Net()\n\n"
            "    def forward(self, x):\n        return self.model(x)",
            "compiled = torch.compile(Wrapper(), mode='reduce-overhead')",
        ),
        (
            "class Wrapper(nn.Module):\n    def build(self):\n        self.net = Net()\n        return self.net\n\n"
            "    def forward(self, x):\n        model = self.build()\n        return model(x)",
            "compiled = torch.compile(Wrapper(), mode='reduce-overhead')",
        ),
    ],
    ids=["local", "argument", "returned-local", "container", "chained", "member", "recursive", "method", "method-member"],
)
def test_a_model_built_by_a_factory_function_is_compiled_through_it(tmp_path: Path, factory: str, use: str) -> None:
    code = textwrap.dedent(NET) + "\n\n" + factory + "\n\n\ndef main():\n" + textwrap.indent(use, "    ") + "\n"
    _, report = lint_project(tmp_path, {"app.py": code})
    assert found(report) == {("GL202", 7)}
    assert report["findings"][0]["region"]["kind"] == "capture"


def test_a_factory_in_another_module_is_followed_and_other_returns_reach_nothing(tmp_path: Path) -> None:
    files = {
        "app/__init__.py": "",
        "app/net.py": textwrap.dedent(NET),
        "app/factory.py": textwrap.dedent("""
            import torch
            from transformers import AutoModel
            from .net import Net

            def build(pretrained):
                if pretrained:
                    return AutoModel.from_pretrained("gpt2")
                return Net()

            def tensors(x):
                return x.view(-1)

            def ones(n):
                return torch.ones(n, device="npu")
            """),
        "app/run.py": textwrap.dedent("""
            import torch
            from app.factory import build, tensors

            model = torch.compile(build(False), mode="reduce-overhead")
            """),
    }
    _, report = lint_project(tmp_path, files)
    assert found(report) == {("GL202", 7)}
    assert report["findings"][0]["region"] == {
        "kind": "capture", "entry": "app/run.py:5", "chain": ["Net.forward"],
        "steps": [{"function": "Net.forward", "path": "app/net.py", "line": 6}],
    }
    # The region is Net.forward alone: the library's model and the tensor helpers add nothing.
    with chdir(tmp_path):
        status, out = run_cli("regions", "--format", "json", ".")
    assert status == 0
    (entry,) = json.loads(out)["entries"]
    assert entry["functions"] == ["app.net.Net.forward"]


def test_configured_entry_points(tmp_path: Path) -> None:
    _, report = _lint(
        tmp_path,
        """
        import torch
        from vllm.compilation.decorators import support_torch_compile
        from mylib import capture_runner

        @support_torch_compile
        class LlamaModel(torch.nn.Module):
            def forward(self, x):
                return str(x.shape[0])

        def step(x):
            return x.item()

        runner = capture_runner(step)
        """,
        pyproject=textwrap.dedent("""
            [tool.graphlint]
            compile-entrypoints = ["vllm.compilation.decorators.support_torch_compile"]
            capture-entrypoints = ["mylib.capture_runner"]
        """),
    )
    assert found(report) == {("GL102", 9), ("GL202", 12)}


def test_cross_file_absolute_and_relative_imports_with_reexport(tmp_path: Path) -> None:
    _, report = _lint(
        tmp_path,
        """
        import torch
        from pkg import Model

        compiled = torch.compile(Model(), mode="reduce-overhead")
        """,
        more={
            "pkg/__init__.py": "from .model import Model\n",
            "pkg/model.py": """
        from torch import nn
        from . import ops
        from .ops import scale as rescale

        class Model(nn.Module):
            def forward(self, x):
                return rescale(ops.shift(x))
        """,
            "pkg/ops.py": """
        import torch

        def shift(x):
            return x + torch.arange(x.shape[0])

        def scale(x):
            return x * x.max().item()
        """,
        },
    )
    regions = {(Path(f["path"]).name, f["code"], f["line"]): f["region"]["chain"] for f in report["findings"]}
    assert regions == {
        ("ops.py", "GL203", 5): ["Model.forward", "shift"],
        ("ops.py", "GL202", 8): ["Model.forward", "scale"],
    }


def test_nested_compile_and_hot_path(tmp_path: Path) -> None:
    """Dynamo inlines ``inner`` where it traces ``outer`` (no GL101), also when a capture runs
    the compiled ``outer``; an eager capture that runs ``decode`` runs ``inner``'s own compiled
    graph inside it (GL101)."""
    _, report = _lint(tmp_path, """
        import torch

        @torch.compile
        def inner(x):
            return x + 1

        def outer(x):
            return inner(x) * 2

        compiled_outer = torch.compile(outer)
        compiled_again = torch.compile(outer)

        def loop(xs):
            for x in xs:
                torch.compile(outer)(x)

        def decode(x):
            return inner(x) - 1

        def capture(g, x):
            with torch.cuda.graph(g):
                return decode(x)

        def capture_compiled(g, x):
            with torch.cuda.graph(g):
                return compiled_outer(x)
    """)
    assert found(report) == {("GL101", 4), ("GL103", 16)}
    [nested] = [f for f in report["findings"] if f["code"] == "GL101"]
    assert nested["region"]["chain"] == ["capture", "decode", "inner"]


def test_one_changed_file_is_linked_through_importers_and_their_bases(tmp_path: Path) -> None:
    """pre-commit passes only blocks.py: its importers (model.py, run.py) and what they import
    (base.py, for the inherited forward) are linked; findings are reported for blocks.py only."""
    files = {
        "app/__init__.py": "",
        "app/base.py": """
            from torch import nn

            class Base(nn.Module):
                def forward(self, x):
                    return self.block(x)
            """,
        "app/blocks.py": """
            import torch
            from torch import nn

            class Block(nn.Module):
                def forward(self, x):
                    return x + torch.zeros(x.shape[-1])
            """,
        "app/model.py": """
            from .base import Base
            from .blocks import Block

            class Model(Base):
                def __init__(self):
                    super().__init__()
                    self.block = Block()

            def eager_only(x):
                return x.item()
            """,
        "app/run.py": """
            import torch
            from app.model import Model

            model = torch.compile(Model(), mode="reduce-overhead")
            """,
        "unrelated.py": "import torch\n\nnet = torch.compile(lambda x: x.item())\n",
    }
    _, report = _lint(tmp_path, "", more=files)
    assert found(report) == {("GL203", 7), ("GL202", 3)}  # GL202: the compiled lambda
    with chdir(tmp_path):
        status, partial = check_json("--no-cache", "app/blocks.py")
    assert status == 1
    assert partial["findings"] == [f for f in report["findings"] if f["path"] == "app/blocks.py"]
    assert partial["findings"][0]["region"] == {
        "kind": "capture", "entry": "app/run.py:5", "chain": ["Base.forward", "Block.forward"],
        # Base.forward's ``def``, then its call of ``self.block(x)``.
        "steps": [{"function": "Base.forward", "path": "app/base.py", "line": 5},
                  {"function": "Block.forward", "path": "app/base.py", "line": 6}],
    }


@pytest.mark.parametrize(
    "import_blocks",
    ["from app import (\n    blocks,\n)", "from app import \\\n    blocks", "from app import (blocks)"],
    ids=["parenthesized", "backslash", "one-line-parenthesized"],
)
def test_one_changed_file_is_found_from_an_import_over_several_lines(tmp_path: Path, import_blocks: str) -> None:
    """pre-commit passes only blocks.py; run.py names it on a continuation line of its import."""
    files = {
        "app/__init__.py": "",
        "app/blocks.py": "import torch\n\ndef shift(x):\n    return x + torch.arange(x.shape[0])\n",
        "app/run.py": import_blocks + "\nimport torch\n\n@torch.compile(mode='reduce-overhead')\ndef step(x):\n"
        "    return blocks.shift(x)\n",
    }
    lint_project(tmp_path, files)
    with chdir(tmp_path):
        status, partial = check_json("--no-cache", "app/blocks.py")
    assert status == 1 and found(partial) == {("GL203", 4)}
    assert partial["findings"][0]["region"]["chain"] == ["step", "shift"]



def test_a_constant_result_is_not_traced(tmp_path: Path) -> None:
    """``torch._dynamo.assume_constant_result`` and transformers' own spelling of it
    (``@_make_compile_constant`` in ``utils/import_utils.py``, applied under ``@lru_cache``): dynamo
    takes the result as a constant and never traces the body, so its warning is no graph break."""
    helpers = """
        import warnings
        from functools import lru_cache

        import torch


        def _make_compile_constant(fn):
            fn._dynamo_marked_constant = True
            return fn


        @lru_cache
        @_make_compile_constant
        def is_fast_available() -> bool:
            warnings.warn("deprecated")
            return True


        @torch._dynamo.assume_constant_result
        def world_size() -> int:
            print("asked")
            return 1


        def not_constant() -> bool:
            warnings.warn("traced")
            return True
        """
    code = """
        import torch
        from torch import nn
        from helpers import is_fast_available, not_constant, world_size


        class Net(nn.Module):
            def forward(self, x):
                if is_fast_available() and not_constant():
                    return x * world_size()
                return x


        model = torch.compile(Net())
        """
    _, report = _lint(tmp_path, code, "--select", "GL106", more={"helpers.py": helpers})
    assert [(f["path"].rsplit("/", 1)[-1], f["line"]) for f in report["findings"]] == [("helpers.py", 27)]  # not_constant only
