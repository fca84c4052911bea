"""A function that wraps a method of its parameter in place, analysed per class of that parameter.

vllm-ascend's shape with vLLM on its extra path: the plugin captures a model of the host
framework, whose offloader hooks every layer of every model through one parameter
(``original = module.forward``, a ``forward`` closure calling it, ``module.forward = forward``).
With one ``module`` for all layers, each layer's ``forward`` ran every layer's, so the capture of
one model reached the plugin's ops of every model (and on the real trees filled the solve's
budget). The projects are written here in that shape (``parameter_class_copies.py``).
"""

from __future__ import annotations

import json
import textwrap
from contextlib import chdir
from pathlib import Path

from tests.checks.conftest import found, lint_project, run_cli

HOST = {  # vLLM's shape: an offloader that hooks layers in place, two models built with it
    "hostfw/__init__.py": "",
    "hostfw/offloader.py": """
        import torch


        class Offloader:
            def wrap_modules(self, modules):
                for index, module in enumerate(modules):
                    self._hook_module_forward(index, module)

            def _hook_module_forward(self, index, module):
                original_forward = module.forward

                def forward(*args, **kwargs):
                    module.forward = original_forward
                    torch.ops.host.wait_prefetch(args[0], index)
                    output = original_forward(*args, **kwargs)
                    module.forward = forward
                    return output

                module.forward = forward


        def hook_in_place(module):
            original_forward = module.forward

            def forward(x):
                return original_forward(x)

            module.forward = forward


        _OFFLOADER = Offloader()


        def get_offloader():
            return _OFFLOADER
        """,
    "hostfw/models.py": """
        from torch import nn

        from hostfw.offloader import get_offloader, hook_in_place


        class LlamaDecoderLayer(nn.Module):
            def forward(self, x):
                return x * 2


        class MambaDecoderLayer(nn.Module):
            def forward(self, x):
                return x + 1


        class LlamaModel(nn.Module):
            def __init__(self, layer_cls=LlamaDecoderLayer):
                super().__init__()
                self.layers = nn.ModuleList([layer_cls() for _ in range(2)])
                get_offloader().wrap_modules(self.layers)
                self.final = layer_cls()
                hook_in_place(self.final)

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return self.final(x)


        class MambaModel(nn.Module):
            def __init__(self, layer_cls=MambaDecoderLayer):
                super().__init__()
                self.layers = nn.ModuleList([layer_cls() for _ in range(2)])
                get_offloader().wrap_modules(self.layers)
                self.final = layer_cls()
                hook_in_place(self.final)

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return self.final(x)
        """,
}
PLUGIN = {  # vllm-ascend's shape: its layers in the host's models, a graph wrapper around one
    "npu_plugin/__init__.py": "",
    "npu_plugin/layers.py": """
        from hostfw.models import LlamaDecoderLayer, MambaDecoderLayer


        class AscendLlamaDecoderLayer(LlamaDecoderLayer):
            def forward(self, x):
                return super().forward(x) * x.abs().max().item()


        class AscendMambaDecoderLayer(MambaDecoderLayer):
            def forward(self, x):
                return super().forward(x) + x.sum().item()
        """,
    "npu_plugin/graphs.py": """
        import torch
        from hostfw.models import LlamaModel, MambaModel

        from npu_plugin.layers import AscendLlamaDecoderLayer, AscendMambaDecoderLayer


        class GraphWrapper:
            def __init__(self, runnable):
                self.runnable = runnable

            def capture(self, graph, x):
                with torch.npu.graph(graph):
                    return self.runnable(x)


        def capture_llama():
            return GraphWrapper(LlamaModel(AscendLlamaDecoderLayer))


        def run_mamba_eagerly(x):
            return MambaModel(AscendMambaDecoderLayer)(x)
        """,
}
PYPROJECT = '[tool.graphlint]\nextra-paths = ["../site"]\n'


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))


def test_a_wrapper_stored_on_a_parameter_runs_only_its_own_class_forward(tmp_path: Path) -> None:
    """The capture of a ``LlamaModel`` of the plugin's layers runs them through the offloader's
    ``forward`` closure (and through ``hook_in_place``'s), which calls the layer's own
    ``forward``: its ``.item()`` is found, with the host's part of the chain. The plugin's Mamba
    layers, hooked by the same functions, run eagerly: their ``.item()`` is no finding (before
    the copies per class it was, through the shared closures)."""
    _write(tmp_path / "site", HOST)
    project = tmp_path / "plugin"
    project.mkdir()
    status, report = lint_project(project, {k: textwrap.dedent(v) for k, v in PLUGIN.items()}, pyproject=PYPROJECT)
    assert found(report) == {("GL202", 7)}, report["findings"]
    (finding,) = report["findings"]
    assert finding["path"] == "npu_plugin/layers.py"
    assert finding["region"]["chain"] == [
        "GraphWrapper.capture", "LlamaModel.forward", "AscendLlamaDecoderLayer.forward",
    ]
    with chdir(project):
        status, out = run_cli("regions", "--format", "json", "--no-cache", ".")
    assert status == 0, out
    (entry,) = json.loads(out)["entries"]
    functions = set(entry["functions"])
    # Sound: the wrappers still run the layer they wrap, both hooks' closures included.
    assert {
        "hostfw.offloader.Offloader._hook_module_forward.forward", "hostfw.offloader.hook_in_place.forward",
        "npu_plugin.layers.AscendLlamaDecoderLayer.forward", "hostfw.models.LlamaDecoderLayer.forward",
    } <= functions
    assert not {"npu_plugin.layers.AscendMambaDecoderLayer.forward", "hostfw.models.MambaDecoderLayer.forward"} & functions


LAYER_FACTORY = {  # vLLM's make_layers handing its layers to the offloader, which has subclasses
    "app/__init__.py": "",
    "app/offloader.py": """
        class BaseOffloader:
            def wrap_modules(self, modules):
                return list(modules)


        class PrefetchOffloader(BaseOffloader):
            def wrap_modules(self, modules):
                all_modules = []
                for module in modules:
                    all_modules.append(module)
                return all_modules


        class PluginOffloader(PrefetchOffloader):
            pass


        _OFFLOADER = PrefetchOffloader()


        def get_offloader():
            return _OFFLOADER
        """,
    "app/models.py": """
        import torch
        from torch import nn

        from app.offloader import get_offloader


        def make_layers(num_layers, layer_fn):
            return nn.ModuleList(get_offloader().wrap_modules(layer_fn(i) for i in range(num_layers)))


        class LlamaLayer(nn.Module):
            def forward(self, x):
                return x * 2


        class MambaLayer(nn.Module):
            def forward(self, x):
                return x.sum().item()


        class LlamaModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = make_layers(2, lambda i: LlamaLayer())

            @torch.compile
            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x


        class MambaModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = make_layers(2, lambda i: MambaLayer())

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x
        """,
}


def test_a_method_copied_per_receiver_class_is_copied_per_call_site_in_a_helpers_copy(tmp_path: Path) -> None:
    """In preview, ``make_layers``' copy per call site follows its layers into the offloader's
    ``wrap_modules``; when the offloader's class has subclasses (vllm-ascend derives vLLM's
    ``PrefetchOffloader``), that method is also copied per receiver class, and that copy alone
    returned every model's layers: the compiled ``LlamaModel`` ran ``MambaLayer.forward``. Now the
    receiver's copy is copied per call site in turn."""
    files = {k: textwrap.dedent(v) for k, v in LAYER_FACTORY.items()}
    _, report = lint_project(tmp_path, files, pyproject="[tool.graphlint]\npreview = true\n")
    assert report["findings"] == []
    with chdir(tmp_path):
        status, out = run_cli("regions", "--format", "json", "--no-cache", ".")
    assert status == 0, out
    (entry,) = json.loads(out)["entries"]
    assert entry["functions"] == ["app.models.LlamaLayer.forward", "app.models.LlamaModel.forward"]


SMALL_HOOK = {  # sglang's shape: the in-place hook is a small helper that calls its parameters
    "srt/__init__.py": "",
    "srt/offloader.py": """
        from torch.func import functional_call


        class BaseOffloader:
            def wrap_modules(self, modules):
                return list(modules)


        class LayerOffloader(BaseOffloader):
            def __init__(self, prefetch_step):
                self.prefetch_step = prefetch_step
                self.offloaders = []

            def wrap_modules(self, modules):
                all_modules = []
                for index, module in enumerate(modules):
                    all_modules.append(module)
                    _hook_for_offloader(index, module, self.offloaders, self.prefetch_step)
                return all_modules


        def _hook_for_offloader(index, module, offloaders, prefetch_step):
            def _on_forward_end():
                offloaders[(index + prefetch_step) % len(offloaders)].start_onload()

            _hook_module_forward_raw(
                module,
                on_forward_end=_on_forward_end,
                get_tensors=lambda: offloaders[index].device_tensors(),
            )


        def _hook_module_forward_raw(module, on_forward_end, get_tensors):
            original_forward = module.forward

            def forward(*args, **kwargs):
                module.forward = original_forward
                output = functional_call(module, get_tensors(), args=args, kwargs=kwargs)
                on_forward_end()
                module.forward = forward
                return output

            module.forward = forward


        _OFFLOADER = LayerOffloader(1)


        def get_offloader():
            return _OFFLOADER
        """,
    "srt/models.py": """
        import torch
        from torch import nn

        from srt.offloader import get_offloader


        def make_layers(num_layers, layer_fn, prefix=""):
            return nn.ModuleList(get_offloader().wrap_modules(layer_fn(idx=i, prefix=prefix) for i in range(num_layers)))


        class LlamaLayer(nn.Module):
            def forward(self, x):
                return x * 2


        class MambaLayer(nn.Module):
            def forward(self, x):
                return x.sum().item()


        class LlamaModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = make_layers(2, lambda idx, prefix: LlamaLayer())

            @torch.compile
            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x


        class MambaModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = make_layers(2, lambda idx, prefix: MambaLayer())

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x
        """,
}


def test_an_in_place_hook_copied_per_call_site_is_copied_per_class_within_that_copy(tmp_path: Path) -> None:
    """sglang's offloader hooks layers through ``_hook_module_forward_raw(module, on_forward_end,
    get_tensors)``, a small helper that calls its parameters, so it is copied per call site; its
    one call site hands it every model's layers, and that copy stored every layer's bound
    ``forward`` on every layer class (the compiled ``LlamaModel`` ran ``MambaLayer.forward`` and
    its ``.item()``; on sglang's srt ~130 layer ``forward``s per layer). The copy per class of the
    wrapped parameter is now made within the call site's copy."""
    files = {k: textwrap.dedent(v) for k, v in SMALL_HOOK.items()}
    _, report = lint_project(tmp_path, files)
    assert report["findings"] == []
    with chdir(tmp_path):
        status, out = run_cli("regions", "--format", "json", "--no-cache", ".")
    assert status == 0, out
    (entry,) = json.loads(out)["entries"]
    functions = set(entry["functions"])
    assert {"srt.models.LlamaLayer.forward", "srt.models.LlamaModel.forward"} <= functions
    assert "srt.models.MambaLayer.forward" not in functions
