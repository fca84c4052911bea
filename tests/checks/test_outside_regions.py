"""Functions a framework runs only outside its compiled and captured regions
(``outside-regions``), in vLLM's shapes, written here as small projects.

vLLM's model runner agrees on the DP batch (an all-reduce and its read-back) before a forward and
hands the agreed sizes in; its CUDA graph manager captures a closure that enters
``set_forward_context(..., num_tokens_across_dp=...)``, whose own agreement runs only when that
argument is ``None`` while the configured DP size is above one, which the manager's own
``self.dp_size > 1`` (the same configuration value, read when it was built) rules out. And vLLM
turns compilation and CUDA graphs off for 8-bit bitsandbytes models, so their matmul never runs in
a region.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.checks.conftest import lint_project

DP = {
    "vllm/__init__.py": "",
    "vllm/v1/__init__.py": "",
    "vllm/v1/worker/__init__.py": "",
    "vllm/v1/worker/dp_utils.py": """
        import torch
        import torch.distributed as dist


        def coordinate_batch_across_dp(num_tokens, parallel_config):
            if parallel_config.data_parallel_size == 1:
                return None
            tensor = torch.zeros(parallel_config.data_parallel_size, dtype=torch.int32)
            tensor[parallel_config.data_parallel_rank] = num_tokens
            tensor = tensor.to("cuda", non_blocking=True)
            dist.all_reduce(tensor)
            return int(tensor.max().item())
    """,
    "vllm/forward_context.py": """
        from contextlib import contextmanager

        from vllm.v1.worker.dp_utils import coordinate_batch_across_dp


        @contextmanager
        def set_forward_context(vllm_config, num_tokens=None, num_tokens_across_dp=None):
            if vllm_config.parallel_config.data_parallel_size > 1 and num_tokens is not None:
                if num_tokens_across_dp is None:
                    num_tokens_across_dp = coordinate_batch_across_dp(num_tokens, vllm_config.parallel_config)
            yield num_tokens_across_dp
    """,
    "vllm/v1/worker/gpu/__init__.py": "",
    "vllm/v1/worker/gpu/cudagraph_utils.py": """
        import torch

        from vllm.forward_context import set_forward_context


        class CudaGraphManager:
            def __init__(self, vllm_config):
                self.vllm_config = vllm_config
                self.dp_size = vllm_config.parallel_config.data_parallel_size
                self.graphs = {}

            def capture(self, model, sizes):
                for num_tokens in sizes:
                    across = torch.full((self.dp_size,), num_tokens, device="cpu") if self.dp_size > 1 else None

                    def forward_fn():
                        with set_forward_context(self.vllm_config, num_tokens=num_tokens, num_tokens_across_dp=across):
                            return model(torch.zeros(num_tokens))

                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        forward_fn()
                    self.graphs[num_tokens] = graph
    """,
}

BNB = {
    "vllm/__init__.py": "",
    "vllm/compilation/__init__.py": "",
    "vllm/compilation/cuda_graph.py": """
        class CUDAGraphWrapper:
            def __init__(self, runnable):
                self.runnable = runnable
    """,
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/layers/__init__.py": "",
    "vllm/model_executor/layers/quantization/__init__.py": "",
    "vllm/model_executor/layers/quantization/bitsandbytes.py": """
        import torch
        from torch import nn


        class BitsAndBytesLinearMethod:
            def __init__(self, load_8bit):
                self.load_8bit = load_8bit

            def apply(self, layer, x):
                if self.load_8bit:
                    return self._apply_8bit_weight(layer, x)
                return self._apply_4bit_weight(layer, x)

            def _apply_8bit_weight(self, layer, x):
                states = layer.weight.quant_states
                if layer.weight.generation == 0:
                    layer.scb = states[0].to(x.device)
                return x @ layer.weight.t()

            def _apply_4bit_weight(self, layer, x):
                return x @ torch.ones(x.shape[-1], 4).to(x.device)


        class Linear(nn.Module):
            def __init__(self, load_8bit):
                super().__init__()
                self.weight = nn.Parameter(torch.empty(4, 4))
                self.method = BitsAndBytesLinearMethod(load_8bit)

            def forward(self, x):
                return self.method.apply(self, x)
    """,
    "vllm/model_executor/models.py": """
        from vllm.compilation.cuda_graph import CUDAGraphWrapper
        from vllm.model_executor.layers.quantization.bitsandbytes import Linear

        captured = CUDAGraphWrapper(Linear(load_8bit=False))
    """,
}


def _sites(root: Path, files: dict[str, str], pyproject: str = "") -> set[tuple[str, str, int]]:
    root.mkdir(parents=True, exist_ok=True)
    _, report = lint_project(root, {k: textwrap.dedent(v).lstrip("\n") for k, v in files.items()}, pyproject=pyproject)
    return {(f["path"].rsplit("/", 1)[-1], f["code"], f["line"]) for f in report["findings"]}


def test_the_dp_batch_agreement_a_captured_forward_context_could_start_is_outside_regions(tmp_path: Path) -> None:
    """With no preset the capture reaches the agreement's host tensor, its copy and its
    read-back; the vLLM preset says the runner agrees outside regions: no finding there."""
    bare = _sites(tmp_path / "bare", DP, pyproject="[tool.graphlint]\npresets = []\n")
    assert {s for s in bare if s[0] == "dp_utils.py"} >= {("dp_utils.py", "GL201", 10), ("dp_utils.py", "GL202", 12)}
    assert {s for s in _sites(tmp_path / "vllm", DP) if s[0] == "dp_utils.py"} == set()


def test_an_eager_only_function_is_outside_regions_and_its_callers_are_not(tmp_path: Path) -> None:
    """The 8-bit matmul's move of a quantization state is no finding with the vLLM preset; the
    4-bit path beside it, which vLLM does capture, still is."""
    bare = _sites(tmp_path / "bare", BNB, pyproject="[tool.graphlint]\npresets = []\ncapture-entrypoints = [\"vllm.compilation.cuda_graph.CUDAGraphWrapper\"]\n")
    assert ("bitsandbytes.py", "GL201", 17) in bare and ("bitsandbytes.py", "GL201", 21) in bare
    preset = _sites(tmp_path / "vllm", BNB)
    assert ("bitsandbytes.py", "GL201", 17) not in preset and ("bitsandbytes.py", "GL201", 21) in preset


def test_outside_regions_in_the_projects_own_configuration(tmp_path: Path) -> None:
    """The same key in ``[tool.graphlint]``, by a glob: the project's own agreement helper."""
    files = {k.replace("vllm/", "app/"): v.replace("vllm.", "app.") for k, v in DP.items()}
    bare = _sites(tmp_path / "bare", files)
    assert ("dp_utils.py", "GL202", 12) in bare
    configured = _sites(tmp_path / "own", files, pyproject='[tool.graphlint]\noutside-regions = ["app.v1.worker.dp_utils.coordinate_*"]\n')
    assert {s for s in configured if s[0] == "dp_utils.py"} == set()
