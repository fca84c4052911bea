"""Values followed through a project: what a compile or capture entry reaches, form by form.

Each test writes a small project in the shape real ones take (an NPU graph wrapper, a layer
factory, a closure run under capture, ...) and reads ``graphlint regions --format json`` (the
functions each entry reaches, by dotted name) or ``graphlint check`` (the finding and its chain).
"""

from __future__ import annotations

import json
import textwrap
from contextlib import chdir
from pathlib import Path
from typing import Any

import pytest

from tests.checks.conftest import check_json, found, lint_project, run_cli

NET = """
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return x.sum().item()
"""


def regions(root: Path, files: dict[str, str], *args: str, pyproject: str = "") -> list[dict[str, Any]]:
    (root / "pyproject.toml").write_text(textwrap.dedent(pyproject))
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    with chdir(root):
        status, out = run_cli("regions", "--format", "json", "--no-cache", *args)
    assert status == 0, out
    return json.loads(out)["entries"]


def reached(entries: list[dict[str, Any]]) -> dict[tuple[str, int], list[str]]:
    return {(e["path"], e["line"]): e["functions"] for e in entries}


def test_a_graph_wrapper_captures_the_model_it_stores(tmp_path: Path) -> None:
    """vllm-ascend's shape: ``Wrapper(model)`` keeps it as ``self.runnable`` and runs it inside
    ``with torch.npu.graph(...)``."""
    files = {
        "app/__init__.py": "",
        "app/net.py": NET,
        "app/graphs.py": """
            import torch


            class GraphWrapper:
                def __init__(self, runnable, pool=None):
                    self.runnable = runnable
                    self.graph = torch.npu.NPUGraph()

                def __call__(self, *args, **kwargs):
                    with torch.npu.graph(self.graph):
                        output = self.runnable(*args, **kwargs)
                    return output
            """,
        "app/runner.py": """
            from app.graphs import GraphWrapper
            from app.net import Net


            def load():
                model = Net()
                return GraphWrapper(model)
            """,
    }
    status, report = lint_project(tmp_path, {name: textwrap.dedent(text) for name, text in files.items()})
    assert found(report) == {("GL202", 8)}
    assert report["findings"][0]["region"] == {
        "kind": "capture", "entry": "app/graphs.py:11", "chain": ["GraphWrapper.__call__", "Net.forward"],
        # The ``with`` block, then the call of the runnable in it.
        "steps": [{"function": "GraphWrapper.__call__", "path": "app/graphs.py", "line": 11},
                  {"function": "Net.forward", "path": "app/graphs.py", "line": 12}],
    }


def test_a_store_of_a_parameter_never_resolves_to_a_module_level_name_of_the_same_spelling(tmp_path: Path) -> None:
    """``self.model = model`` in ``__init__`` holds the argument, not the module-level ``model``
    (the wrapper itself): a wrong link there made the wrapper call itself."""
    code = NET + textwrap.dedent("""

        class Wrapper(nn.Module):
            def __init__(self, model):
                super().__init__()
                self.model = model

            def forward(self, x):
                return self.model(x)


        model = Wrapper(Net())
        compiled = torch.compile(model, mode="reduce-overhead")
        """)
    assert reached(regions(tmp_path, {"app.py": code})) == {("app.py", 21): ["app.Net.forward", "app.Wrapper.forward"]}


def test_a_layer_factory_with_a_lambda_reaches_every_layer(tmp_path: Path) -> None:
    """vLLM's ``make_layers(n, lambda prefix: Layer(...))`` builds the ModuleList in a helper of
    another module and returns it in a tuple."""
    files = {
        "models/__init__.py": "",
        "models/utils.py": """
            import torch


            def make_layers(num_layers, layer_fn, prefix=""):
                modules = torch.nn.ModuleList([layer_fn(prefix=f"{prefix}.{i}") for i in range(num_layers)])
                return 0, num_layers, modules
            """,
        "models/llama.py": """
            import torch
            from torch import nn
            from .utils import make_layers


            class DecoderLayer(nn.Module):
                def __init__(self, prefix):
                    super().__init__()
                    self.mlp = Mlp()

                def forward(self, x):
                    return self.mlp(x)


            class Mlp(nn.Module):
                def forward(self, x):
                    return x * 2


            class Model(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.start_layer, self.end_layer, self.layers = make_layers(
                        n, lambda prefix: DecoderLayer(prefix=prefix), prefix="model.layers"
                    )

                def forward(self, x):
                    for layer in self.layers[self.start_layer : self.end_layer]:
                        x = layer(x)
                    return x


            compiled = torch.compile(Model(2))
            """,
    }
    assert reached(regions(tmp_path, files)) == {
        ("models/llama.py", 34): ["models.llama.DecoderLayer.forward", "models.llama.Mlp.forward", "models.llama.Model.forward"],
    }


@pytest.mark.parametrize(
    ("code", "functions"),
    [
        (  # an argument: def run(model): torch.compile(model)
            "def run(model, *, mode):\n    return torch.compile(model, mode=mode)\n\nfast = run(Net(), mode='default')\n",
            ["app.Net.forward"],
        ),
        (  # a closure over a local, run under capture
            "def capture(model, x, g):\n    def run_once():\n        return model(x)\n\n"
            "    with torch.npu.graph(g):\n        run_once()\n\ncapture(Net(), 1, None)\n",
            ["app.Net.forward", "app.capture.run_once"],
        ),
        (  # functools.partial binds the model
            "import functools\n\ndef step(model, x):\n    return model(x)\n\n"
            "fast = torch.compile(functools.partial(step, Net()))\n",
            ["app.Net.forward", "app.step"],
        ),
        (  # a decorator that returns a wrapper
            "import functools\n\ndef timed(fn):\n    @functools.wraps(fn)\n    def wrapper(*args, **kwargs):\n"
            "        return fn(*args, **kwargs)\n    return wrapper\n\n@timed\ndef step(model, x):\n    return model(x)\n\n"
            "def run(g, x):\n    with torch.npu.graph(g):\n        step(Net(), x)\n",
            ["app.Net.forward", "app.step", "app.timed.wrapper"],
        ),
        (  # **kwargs forwarding into a constructor
            "class Runner:\n    def __init__(self, runnable):\n        self.runnable = runnable\n\n"
            "    def run(self, x):\n        return self.runnable(x)\n\n"
            "def make(**kwargs):\n    return Runner(**kwargs)\n\nfast = torch.compile(make(runnable=Net()).run)\n",
            ["app.Net.forward", "app.Runner.run"],
        ),
        (  # nn.ModuleList().append(...) in a loop
            "class Model(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.layers = nn.ModuleList()\n        for _ in range(n):\n            self.layers.append(Net())\n\n"
            "    def forward(self, x):\n        for layer in self.layers:\n            x = layer(x)\n        return x\n\n"
            "fast = torch.compile(Model(2))\n",
            ["app.Model.forward", "app.Net.forward"],
        ),
        (  # a classmethod constructor: cls(...) in it builds the class it is called on
            "class Model(nn.Module):\n    def __init__(self, config):\n        super().__init__()\n"
            "        self.net = Net()\n\n    @classmethod\n    def _from_config(cls, config):\n        return cls(config)\n\n"
            "    def forward(self, x):\n        return self.net(x)\n\nclass Big(Model):\n    pass\n\n"
            "fast = torch.compile(Big._from_config({}))\n",
            ["app.Model.forward", "app.Net.forward"],
        ),
        (  # super() and the MRO: the subclass's own method, then the base's through super()
            "class Base(nn.Module):\n    def forward(self, x):\n        return self.head(x)\n\n    def head(self, x):\n"
            "        return x\n\nclass Model(Base):\n    def __init__(self):\n        super().__init__()\n        self.net = Net()\n\n"
            "    def forward(self, x):\n        return super().forward(self.net(x))\n\n"
            "    def head(self, x):\n        return x + 1\n\nfast = torch.compile(Model())\n",
            ["app.Base.forward", "app.Model.forward", "app.Model.head", "app.Net.forward"],
        ),
        (  # a generator of layers, and a dict of them
            "def blocks(n):\n    for _ in range(n):\n        yield Net()\n\n"
            "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.layers = nn.ModuleList(blocks(2))\n        self.heads = {'a': Net()}\n\n"
            "    def forward(self, x, name):\n        for layer in self.layers:\n            x = layer(x)\n"
            "        return self.heads[name](x)\n\nfast = torch.compile(Model())\n",
            ["app.Model.forward", "app.Net.forward"],
        ),
        (  # a lambda handed to compile
            "model = Net()\nfast = torch.compile(lambda x: model(x) + 1)\n",
            ["app.<lambda1>", "app.Net.forward"],
        ),
        (  # lists joined with + (padding layers around a helper's list) and repeated with *
            "class Pad(nn.Module):\n    def forward(self, x):\n        return x\n\n"
            "def wrap_all(layers):\n    return list(layers)\n\n"
            "class Model(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.layers = nn.ModuleList([Pad() for _ in range(1)] + wrap_all(Net() for _ in range(n)) + [Pad()] * 2)\n\n"
            "    def forward(self, x):\n        for layer in self.layers:\n            x = layer(x)\n        return x\n\n"
            "fast = torch.compile(Model(2))\n",
            ["app.Model.forward", "app.Net.forward", "app.Pad.forward"],
        ),
        (  # itertools.islice over a ModuleList, enumerated
            "from itertools import islice\n\nclass Model(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.layers = nn.ModuleList([Net() for _ in range(n)])\n\n"
            "    def forward(self, x):\n        for i, layer in enumerate(islice(self.layers, 0, 2)):\n            x = layer(x)\n"
            "        return x\n\nfast = torch.compile(Model(2))\n",
            ["app.Model.forward", "app.Net.forward"],
        ),
        (  # stacked decorators on forward (transformers: @merge_with_config_defaults over @capture_outputs(...))
            "import functools\n\n"
            "def capture_outputs(tie=True):\n    def wrapped_fn(func):\n        @functools.wraps(func)\n"
            "        def wrapper(self, *args, **kwargs):\n            return func(self, *args, **kwargs)\n        return wrapper\n"
            "    return wrapped_fn\n\n"
            "def merge_defaults(func):\n    @functools.wraps(func)\n    def wrapper(self, *args, **kwargs):\n"
            "        return func(self, *args, **kwargs)\n    return wrapper\n\n"
            "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.net = Net()\n\n"
            "    @merge_defaults\n    @capture_outputs(tie=False)\n    def forward(self, x):\n        return self.net(x)\n\n"
            "fast = torch.compile(Model())\n",
            ["app.Model.forward", "app.Net.forward", "app.capture_outputs.wrapped_fn.wrapper", "app.merge_defaults.wrapper"],
        ),
        (  # one decorator twice: two calls of it from the same class body, not one
            "import functools\n\ndef merge_defaults(func):\n    @functools.wraps(func)\n    def wrapper(self, *args, **kwargs):\n"
            "        return func(self, *args, **kwargs)\n    return wrapper\n\n"
            "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.net = Net()\n\n"
            "    @merge_defaults\n    @merge_defaults\n    def forward(self, x):\n        return self.net(x)\n\n"
            "fast = torch.compile(Model())\n",
            ["app.Model.forward", "app.Net.forward", "app.merge_defaults.wrapper"],
        ),
    ],
    ids=[
        "argument", "closure", "partial", "decorator-wrapper", "kwargs", "modulelist-append", "classmethod",
        "super-mro", "generator-dict", "lambda", "list-concatenation", "islice", "stacked-decorators", "decorator-twice",
    ],
)
def test_a_value_flow_form_reaches_the_model(tmp_path: Path, code: str, functions: list[str]) -> None:
    (entry,) = regions(tmp_path, {"app.py": NET + "\n\n" + code})
    assert entry["functions"] == functions
    assert entry["unresolved"] == []


def test_calls_nobody_gave_a_value_are_listed_as_unresolved(tmp_path: Path) -> None:
    """The wrapper is built outside the linted files: what it runs is unknown, and said so."""
    files = {
        "graphs.py": """
            import torch


            class GraphWrapper:
                def __init__(self, runnable):
                    self.runnable = runnable

                def __call__(self, *args):
                    with torch.npu.graph(torch.npu.NPUGraph()):
                        return self.runnable(*args)
            """,
    }
    (entry,) = regions(tmp_path, files)
    assert (entry["kind"], entry["via"], entry["line"]) == ("capture", "block", 10)
    assert entry["unresolved"] == [{"path": "graphs.py", "line": 11, "call": "self.runnable(...)"}]
    with chdir(tmp_path):
        status, out = run_cli("check", "--no-cache", ".")
    assert status == 0
    assert "Regions: 0 compiled, 1 capture entry point(s); functions reached: 0 compiled, 0 capture; " in out
    assert "1 unresolved call(s) in capture regions (see `graphlint regions`)" in out


SGLANG_SHAPED = {  # PEP 420: srt/ and its subdirectories have no __init__.py
    "python/sglang/__init__.py": "",
    "python/sglang/srt/layers/activation.py": """
        import torch
        from torch import nn


        class SiluAndMul(nn.Module):
            def forward(self, x):
                return x * torch.ones(x.shape[-1])
        """,
    "python/sglang/srt/models/llama.py": """
        from torch import nn
        from sglang.srt.layers.activation import SiluAndMul


        class LlamaMLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.act_fn = SiluAndMul()

            def forward(self, x):
                return self.act_fn(x)
        """,
    "python/sglang/srt/model_executor/graph_runner.py": """
        import torch
        from sglang.srt.models.llama import LlamaMLP


        def capture(graph, x):
            model = LlamaMLP()
            with torch.npu.graph(graph):
                model(x)
        """,
}


# ``presets = []``: sglang's own capture blocks are walked without its preset (a held preset would
# hold them: regions.py); what is tested here is how the modules are named.
@pytest.mark.parametrize(
    "pyproject",
    ['[tool.graphlint]\npresets = []\n', '[tool.graphlint]\npresets = []\nsrc = ["python"]\n'],
    ids=["found-from-imports", "configured-src"],
)
def test_namespace_packages_are_named_from_their_import_root(tmp_path: Path, pyproject: str) -> None:
    _, report = lint_project(tmp_path, {k: textwrap.dedent(v) for k, v in SGLANG_SHAPED.items()}, pyproject=pyproject)
    assert found(report) == {("GL203", 8)}
    assert report["findings"][0]["region"]["chain"] == ["capture", "LlamaMLP.forward", "SiluAndMul.forward"]
    with chdir(tmp_path):
        _, out = run_cli("regions", "--format", "json", "--no-cache", ".")
    (entry,) = json.loads(out)["entries"]
    assert entry["functions"] == [
        "sglang.srt.layers.activation.SiluAndMul.forward", "sglang.srt.models.llama.LlamaMLP.forward",
    ]


HOST_FRAMEWORK = {  # vLLM's shape: the framework captures the model a plugin registers
    "vllm/compilation/graphs.py": """
        import torch


        class GraphRunner:
            def __init__(self, model):
                self.model = model

            def capture(self, graph, x):
                with torch.npu.graph(graph):
                    return self.model(x)
        """,
    "vllm/compilation/bad.py": "import torch\n\ndef unused(x):\n    return torch.compile(lambda y: y.item())(x)\n",
}
PLUGIN = {
    "vllm_plugin/__init__.py": "",
    "vllm_plugin/models.py": """
        import torch
        from torch import nn
        from vllm.compilation.graphs import GraphRunner


        class AscendModel(nn.Module):
            def forward(self, x):
                return x + torch.arange(4)


        def register():
            return GraphRunner(AscendModel())
        """,
}


@pytest.mark.parametrize("how", ["cli", "config"])
def test_a_plugin_is_reached_through_the_host_framework_on_an_extra_path(tmp_path: Path, how: str) -> None:
    host = tmp_path / "site"
    for name, text in HOST_FRAMEWORK.items():
        (host / name).parent.mkdir(parents=True, exist_ok=True)
        (host / name).write_text(textwrap.dedent(text))
    project = tmp_path / "plugin"
    project.mkdir()
    args = ("--extra-path", str(host)) if how == "cli" else ()
    pyproject = '[tool.graphlint]\nextra-paths = ["../site"]\n' if how == "config" else ""
    files = {name: textwrap.dedent(text) for name, text in PLUGIN.items()}
    status, report = lint_project(project, files, *args, pyproject=pyproject)
    # Only the plugin's files are reported on: the host's own GL202 (bad.py) is not.
    assert found(report) == {("GL203", 9)}
    (finding,) = report["findings"]
    assert finding["path"] == "vllm_plugin/models.py"
    assert finding["region"]["kind"] == "capture"
    assert finding["region"]["entry"].endswith("site/vllm/compilation/graphs.py:10")
    assert finding["region"]["chain"] == ["GraphRunner.capture", "AscendModel.forward"]
    with chdir(project):
        _, out = run_cli("regions", "--format", "json", "--no-cache", *args, ".")
    (entry,) = json.loads(out)["entries"]
    assert (entry["path"].endswith("site/vllm/compilation/graphs.py"), entry["via"]) == (True, "block")
    assert entry["functions"] == ["vllm_plugin.models.AscendModel.forward"]
    (project / "pyproject.toml").write_text("")
    with chdir(project):  # without the host, nothing captures the plugin's model
        status, alone = check_json("--no-cache", ".")
    assert status == 0 and alone["findings"] == []


def test_from_a_package_import_reads_what_the_package_binds_over_its_submodule_of_that_name(tmp_path: Path) -> None:
    """transformers' shape: ``utils/auto_docstring.py`` defines ``auto_docstring`` and
    ``utils/__init__.py`` re-exports it, so ``from .utils import auto_docstring`` is the function
    (Python rebinds the package attribute after importing the submodule), not the module. Taken as
    the module, ``@auto_docstring class Net`` held nothing and the entry reached no function."""
    files = {
        "app/__init__.py": "",
        "app/utils/__init__.py": "from .auto_docstring import auto_docstring\n",
        "app/utils/auto_docstring.py": """
            def auto_docstring(obj):
                obj.__doc__ = "documented"
                return obj
        """,
        "app/net.py": """
            import torch
            from torch import nn

            from .utils import auto_docstring


            @auto_docstring
            class Net(nn.Module):
                def forward(self, x):
                    return x.sum().item()
        """,
        "run.py": """
            import torch
            from app.net import Net

            model = torch.compile(Net())
        """,
    }
    assert reached(regions(tmp_path, files)) == {("run.py", 5): ["app.net.Net.forward"]}


DOCSTRING_DECORATOR = """
    def method_doc(func, intro=None):
        func.__doc__ = intro or "documented"
        return func


    def class_doc(cls, intro=None):
        cls.__doc__ = intro or "documented"
        return cls


    def auto_docstring(obj=None, *, intro=None):
        def decorator(obj):
            if len(obj.__qualname__.split(".")) > 1:
                return method_doc(obj, intro=intro)
            return class_doc(obj, intro=intro)

        if obj:
            return decorator(obj)
        return decorator
"""


def test_a_decorator_that_returns_what_it_decorates_gives_each_name_its_own_object(tmp_path: Path) -> None:
    """transformers' ``@auto_docstring`` (bare, or with arguments) on every model class and
    forward: each decorated name holds its own class, not every class the decorator was ever
    handed, nor the inner decorator (returned only when called with arguments). Compiling one
    model reaches its forward alone; on main it reached both models and the docstring code."""
    files = {
        "app/__init__.py": "",
        "app/docs.py": DOCSTRING_DECORATOR,
        "app/models.py": """
            import torch
            from torch import nn

            from .docs import auto_docstring


            @auto_docstring
            class Speech(nn.Module):
                @auto_docstring
                def forward(self, x):
                    return x.sum().item()


            @auto_docstring(intro="A text model.")
            class Text(nn.Module):
                @auto_docstring(intro="Runs it.")
                def forward(self, x):
                    return x.tolist()
        """,
        "run.py": """
            import torch
            from app.models import Speech

            model = torch.compile(Speech())
        """,
    }
    assert reached(regions(tmp_path, files)) == {("run.py", 5): ["app.models.Speech.forward"]}


def test_a_function_returning_its_parameter_gives_each_call_its_argument_and_unknown_ones_all(tmp_path: Path) -> None:
    """``keep(A())`` is an ``A`` even though ``keep(B())`` is called too; ``keep(*parts)`` with
    ``parts`` not known may be any argument ``keep`` was ever handed."""
    code = """
        import torch
        from torch import nn


        class A(nn.Module):
            def forward(self, x):
                return x.sum().item()


        class B(nn.Module):
            def forward(self, x):
                return x.tolist()


        def keep(module, note=None):
            module.note = note
            return module


        other = keep(B())
        model = torch.compile(keep(A()))


        def build(parts):
            return torch.compile(keep(*parts))
    """
    assert reached(regions(tmp_path, {"app.py": code})) == {
        ("app.py", 22): ["app.A.forward"],
        ("app.py", 26): ["app.A.forward", "app.B.forward"],
    }
