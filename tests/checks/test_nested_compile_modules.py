"""GL101 on compiled modules: a model compiled and captured is compile-then-capture, a layer
compiled on its own inside a model captured eagerly is a nested compile (issue #13)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.checks.conftest import lint_project


def _sites(tmp_path: Path, files: dict[str, str], pyproject: str = "") -> set[tuple[str, str, int]]:
    _, report = lint_project(tmp_path, {k: textwrap.dedent(v).lstrip("\n") for k, v in files.items()}, pyproject=pyproject)
    return {(f["path"].rsplit("/", 1)[-1], f["code"], f["line"]) for f in report["findings"]}


# sglang's shape (models/minimax_m2.py, ``MiniMaxM2RMSNormTP``): a norm layer whose ``forward``
# compiles on its own, and another compiled by ``torch.compile(layer)``, both run by the decoder
# layer of a model that the NPU graph runner captures eagerly. The third norm compiles with
# ``disable=`` a flag.
EAGER_MODEL = {
    "serve/__init__.py": "",
    "serve/models/__init__.py": "",
    "serve/models/norms.py": """
        import torch
        from torch import nn

        _is_npu = hasattr(torch, "npu")


        def get_compiler_backend():
            return "npugraph_ex"


        class RMSNormTP(nn.Module):
            @torch.compile(dynamic=True, backend=get_compiler_backend())
            def forward(self, x):
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


        class GatedNorm(nn.Module):
            def forward(self, x):
                return x * x.sigmoid()


        class MaybeCompiledNorm(nn.Module):
            @torch.compile(dynamic=True, disable=_is_npu)
            def forward(self, x):
                return x * 2
    """,
    "serve/models/model.py": """
        import torch
        from torch import nn

        from serve.models.norms import GatedNorm, MaybeCompiledNorm, RMSNormTP


        class DecoderLayer(nn.Module):
            def __init__(self):
                super().__init__()
                self.q_norm = RMSNormTP()
                self.gate = torch.compile(GatedNorm())
                self.out_norm = MaybeCompiledNorm()

            def forward(self, x):
                return self.out_norm(self.gate(self.q_norm(x)))


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([DecoderLayer() for _ in range(2)])

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x


        class ForCausalLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.model = Model()

            def forward(self, x):
                return self.model(x)
    """,
    "serve/runner.py": """
        import torch

        from serve.models.model import ForCausalLM


        class GraphRunner:
            def __init__(self):
                self.model = ForCausalLM()
                self.graph = torch.npu.NPUGraph()

            def capture(self, x):
                with torch.npu.graph(self.graph):
                    return self.model.forward(x)
    """,
}


def test_a_layer_compiled_on_its_own_inside_an_eager_captured_model_is_a_nested_compile(tmp_path: Path) -> None:
    """Its decorator and its ``torch.compile(layer)`` call are reported; a compile that may be
    disabled is not."""
    assert _sites(tmp_path, EAGER_MODEL) == {("norms.py", "GL101", 12), ("model.py", "GL101", 11)}


# A model compiled whole and captured: by the capture block through the runner's own helper, and
# by ``make_graphed_callables``. The layers are traced with it (dynamo inlines them).
COMPILED_MODEL = {
    "serve/__init__.py": "",
    "serve/model.py": """
        import torch
        from torch import nn


        class Norm(nn.Module):
            @torch.compile(dynamic=True)
            def forward(self, x):
                return x * 2


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = Norm()

            def forward(self, x):
                return self.norm(x) + 1


        class Runner:
            def __init__(self):
                self.model = torch.compile(Model())
                self.graph = torch.npu.NPUGraph()

            def run_once(self, x):
                return self.model(x)

            def capture(self, x):
                with torch.npu.graph(self.graph):
                    return self.run_once(x)


        class Head(nn.Module):
            def forward(self, x):
                return x.sum(-1)


        graphed = torch.cuda.make_graphed_callables(torch.compile(Head()), (torch.zeros(4),))
    """,
}


def test_a_compiled_model_run_by_the_capture_is_no_nested_compile(tmp_path: Path) -> None:
    assert _sites(tmp_path, COMPILED_MODEL) == set()


# vLLM's shape: CUDAGraphWrapper captures the causal LM, whose eager ``forward`` runs the inner
# ``@support_torch_compile`` model (a full CUDA graph over a compiled model, by design).
WRAPPED_VLLM_MODEL = {
    "vllm/__init__.py": "",
    "vllm/compilation/__init__.py": "",
    "vllm/compilation/decorators.py": """
        def support_torch_compile(cls):
            return cls
    """,
    "vllm/compilation/cuda_graph.py": """
        import torch


        class CUDAGraphWrapper:
            def __init__(self, runnable):
                self.runnable = runnable
                self.graph = torch.cuda.CUDAGraph()

            def __call__(self, *args):
                with torch.cuda.graph(self.graph):
                    return self.runnable(*args)
    """,
    "vllm/models/__init__.py": "",
    "vllm/models/llama.py": """
        from torch import nn

        from vllm.compilation.cuda_graph import CUDAGraphWrapper
        from vllm.compilation.decorators import support_torch_compile


        @support_torch_compile
        class LlamaModel(nn.Module):
            def forward(self, x):
                return x * 2


        class LlamaForCausalLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.model = LlamaModel()

            def forward(self, x):
                return self.model(x)


        model = CUDAGraphWrapper(LlamaForCausalLM())
    """,
}


def test_a_nesting_safe_inner_model_under_a_wrapper_capture_is_no_nested_compile(tmp_path: Path) -> None:
    assert _sites(tmp_path, WRAPPED_VLLM_MODEL) == set()
