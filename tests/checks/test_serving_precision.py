"""vLLM's shapes for the false alarms its real tree gave (stop 26), written here as
small projects: kernels picked per platform, host-side statistics, moves to where a tensor
already is, and ``@torch.compile`` helpers nested in a compiled model."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.checks.conftest import lint_project

PLATFORMS = {
    "vllm/__init__.py": "",
    "vllm/platforms/__init__.py": """
        from vllm.platforms.interface import PlatformEnum

        current_platform = None
    """,
    "vllm/platforms/interface.py": """
        import enum


        class PlatformEnum(enum.Enum):
            CUDA = enum.auto()
            XPU = enum.auto()
            CPU = enum.auto()
            OOT = enum.auto()
    """,
    "vllm/compilation/__init__.py": "",
    "vllm/compilation/cuda_graph.py": """
        class CUDAGraphWrapper:
            def __init__(self, runnable):
                self.runnable = runnable
    """,
}

# The kernel table keyed by the platform, and a layer whose kernel comes from it.
KERNELS = {
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/kernels/__init__.py": "",
    "vllm/model_executor/kernels/linear/cuda.py": """
        import torch


        class CudaKernel:
            def __init__(self, config):
                self.config = config

            def apply_weights(self, x):
                return x * torch.ones(x.shape[-1])
    """,
    "vllm/model_executor/kernels/linear/cpu.py": """
        import torch


        def cpu_gemm(x, n):
            out = torch.empty((x.size(0), n), dtype=x.dtype)
            return torch.ops._C.cpu_gemm(x, out)


        class CPUKernel:
            def __init__(self, config):
                self.config = config

            def apply_weights(self, x):
                return cpu_gemm(x, self.config)
    """,
    "vllm/model_executor/kernels/linear/xpu.py": """
        import torch


        @torch.compile
        def int8_quant_ref(x):
            return (x * 127).round()


        class XPUKernel:
            def __init__(self, config):
                self.config = config

            def apply_weights(self, x):
                return int8_quant_ref(x) * x[x > 0].sum()
    """,
    "vllm/model_executor/kernels/linear/__init__.py": """
        from vllm.platforms import PlatformEnum, current_platform
        from vllm.model_executor.kernels.linear.cpu import CPUKernel
        from vllm.model_executor.kernels.linear.cuda import CudaKernel
        from vllm.model_executor.kernels.linear.xpu import XPUKernel

        _POSSIBLE_KERNELS = {
            PlatformEnum.CUDA: [CudaKernel],
            PlatformEnum.XPU: [XPUKernel],
            PlatformEnum.CPU: [CPUKernel],
        }


        def choose_kernel(config):
            for kernel in _POSSIBLE_KERNELS[current_platform._enum]:
                if kernel.__name__ not in config:
                    return kernel
            raise ValueError("no kernel")
    """,
    "vllm/model_executor/models/__init__.py": "",
    "vllm/model_executor/models/model.py": """
        from torch import nn
        from vllm.compilation.cuda_graph import CUDAGraphWrapper
        from vllm.model_executor.kernels.linear import choose_kernel


        class QuantLinear(nn.Module):
            def __init__(self, config):
                super().__init__()
                kernel_type = choose_kernel(config)
                self.kernel = kernel_type(config)

            def forward(self, x):
                return self.kernel.apply_weights(x)


        captured = CUDAGraphWrapper(QuantLinear("int8"))
    """,
}


def _lint(tmp_path: Path, files: dict[str, str], pyproject: str = "") -> dict:
    _, report = lint_project(tmp_path, {k: textwrap.dedent(v).lstrip("\n") for k, v in files.items()}, pyproject=pyproject)
    return report


def _sites(report: dict) -> set[tuple[str, str, int]]:
    return {(f["path"].rsplit("/", 1)[-1], f["code"], f["line"]) for f in report["findings"]}


def test_kernels_of_other_platforms_in_a_table_keyed_by_the_platform_are_never_picked(tmp_path: Path) -> None:
    """``_POSSIBLE_KERNELS[current_platform._enum]``: under CUDA graph capture the CPU and XPU
    entries are not the platform's, so the CPU kernel's host buffer and the XPU kernel's mask and
    nested compile are no findings (the preset's ``not-selected-keys``); the CUDA kernel's host
    tensor is one."""
    report = _lint(tmp_path, {**PLATFORMS, **KERNELS})
    assert report["summary"]["presets"] == ["vllm"]
    assert _sites(report) == {("cuda.py", "GL203", 9)}


def test_a_table_key_is_unselected_only_when_the_knowledge_says_so(tmp_path: Path) -> None:
    """Without the preset the table holds every platform's kernel: the value flow follows all."""
    report = _lint(tmp_path, {**PLATFORMS, **KERNELS}, pyproject='[tool.graphlint]\npresets = []\ncapture-entrypoints = ["vllm.compilation.cuda_graph.CUDAGraphWrapper"]\n')
    sites = _sites(report)
    assert {("cuda.py", "GL203", 9), ("cpu.py", "GL203", 5), ("xpu.py", "GL202", 14)} <= sites


FORWARD_CONTEXT = {
    "vllm/forward_context.py": """
        import time
        from collections import defaultdict
        from contextlib import contextmanager

        import torch

        track_batchsize = False
        forward_times = defaultdict(list)


        @contextmanager
        def set_forward_context(num_tokens):
            start = time.perf_counter()
            try:
                yield
            finally:
                if track_batchsize:
                    forward_times[num_tokens].append(time.perf_counter() - start)
                    for size, times in forward_times.items():
                        median = torch.quantile(torch.tensor(times), q=0.5).item()
                        print(size, round(median, 2))
    """,
    "vllm/worker.py": """
        import torch
        from vllm.compilation.cuda_graph import CUDAGraphWrapper
        from vllm.forward_context import set_forward_context


        def forward_fn(model, x):
            with set_forward_context(x.shape[0]):
                scale = torch.tensor([0.5, 2.0])
                return model(x) * scale, (x * 2).sum().item()


        captured = CUDAGraphWrapper(forward_fn)
    """,
}


def test_host_statistics_read_back_to_python_are_no_capture_sync(tmp_path: Path) -> None:
    """``torch.quantile(torch.tensor(times), q=0.5).item()``: a host tensor of Python floats,
    reduced on the host and read back, neither syncs nor reaches a device op; the host tensor
    multiplied into the model's output and the ``.item()`` of a device value still are findings."""
    report = _lint(tmp_path, {**PLATFORMS, **FORWARD_CONTEXT})
    assert _sites(report) == {("worker.py", "GL203", 8), ("worker.py", "GL202", 9)}


COHERE_ASR = {
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/models/__init__.py": "",
    "vllm/model_executor/models/asr.py": """
        import torch
        from torch import nn
        from vllm.compilation.cuda_graph import CUDAGraphWrapper


        class Features(nn.Module):
            def forward(self, x, seq_len):
                max_len = x.size(-1)
                mask = torch.arange(max_len, device=x.device)
                mask = mask.repeat(x.size(0), 1) >= seq_len.unsqueeze(1)
                x = x.masked_fill(mask.unsqueeze(1).type(torch.bool).to(device=x.device), 0.0)
                scale = torch.ones(4).float()
                return x + scale.to(x.device), x.to(torch.float16).to(x.device)


        captured = CUDAGraphWrapper(Features())
    """,
}


def test_a_move_to_where_the_tensor_already_is_copies_nothing(tmp_path: Path) -> None:
    """``mask`` is made on ``x.device`` and stays there through ``repeat``, a comparison,
    ``unsqueeze`` and ``type``: its ``.to(device=x.device)`` copies nothing. The host-made
    ``scale`` moved to the device is still a copy (GL201, and its factory GL203)."""
    report = _lint(tmp_path, {**PLATFORMS, **COHERE_ASR})
    assert _sites(report) == {("asr.py", "GL203", 12), ("asr.py", "GL201", 13)}


MODULE_STATE = {
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/layers/__init__.py": "",
    "vllm/model_executor/layers/scheme.py": """
        import torch
        from torch import nn


        class W4A8Scheme:
            def create_weights(self, layer: torch.nn.Module, size: int):
                scale = nn.Parameter(torch.empty(1), requires_grad=False)
                layer.register_parameter("input_scale", scale)

            def apply_weights(self, layer: torch.nn.Module, x: torch.Tensor):
                input_scale = layer.input_scale
                scales = input_scale.expand(x.shape[0], 1).to(dtype=torch.float32, device=x.device)
                return x * scales + layer.host_offsets.to(x.device)
    """,
    "vllm/model_executor/layers/rotary.py": """
        import torch
        from torch import nn


        class Rotary(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("cos_sin_cache", torch.ones(8, 4), persistent=False)
                self.host_rows = [torch.ones(4)]

            def forward(self, q):
                cache = self.cos_sin_cache
                rows = self.cos_sin_cache[None, :, None].float().expand(2, -1, -1, -1)
                host_rows = self.host_rows[0]
                q = q * rows.float().to(q.device)
                q = q * cache[0].to(q.device)
                return q * cache.to(q.device) * host_rows.to(q.device)
    """,
    "vllm/model_executor/layers/linear.py": """
        from torch import nn
        from vllm.compilation.cuda_graph import CUDAGraphWrapper
        from vllm.model_executor.layers.rotary import Rotary
        from vllm.model_executor.layers.scheme import W4A8Scheme


        class Linear(nn.Module):
            def __init__(self):
                super().__init__()
                self.scheme = W4A8Scheme()
                self.scheme.create_weights(self, 4)
                self.rotary = Rotary()

            def forward(self, x):
                return self.rotary(self.scheme.apply_weights(self, x))


        captured = CUDAGraphWrapper(Linear())
    """,
}


def test_a_parameter_or_buffer_moved_to_the_activations_device_copies_nothing(tmp_path: Path) -> None:
    """``layer.input_scale``, registered on the layer by ``create_weights`` in the same file, and
    ``self.cos_sin_cache``, a registered buffer read into a name, are on the model's device:
    their ``.to(x.device)`` copies nothing, nor does that of an element or a view of the buffer
    (Gemma 3's ``self.inv_freq[None, :, None].float().expand(...)``). ``layer.host_offsets``,
    which nothing registers, and an element of a plain list of host tensors are still copies."""
    report = _lint(tmp_path, {**PLATFORMS, **MODULE_STATE})
    assert _sites(report) == {("scheme.py", "GL201", 13), ("rotary.py", "GL201", 17)}


EMBEDDING = {
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/layers/__init__.py": "",
    "vllm/model_executor/layers/embedding.py": """
        import torch
        from torch import nn
        from vllm.compilation.cuda_graph import CUDAGraphWrapper
        from vllm.platforms import current_platform


        @torch.compile(dynamic=True, backend=current_platform.simple_compile_backend)
        def get_masked_input_and_mask(ids, start: int, end: int):
            mask = (ids >= start) & (ids < end)
            return ids * mask, ~mask


        @torch.compile(dynamic=True)
        def shift_ids(ids, offset: int):
            return ids + offset


        class VocabParallelEmbedding(nn.Module):
            def forward(self, ids):
                masked, mask = get_masked_input_and_mask(shift_ids(ids, 1), 0, 128)
                return masked


        class Drafter:
            def __init__(self):
                self.embed = VocabParallelEmbedding()

            def generate_draft(self, ids):
                return self.embed(ids)


        captured = CUDAGraphWrapper(Drafter().generate_draft)
    """,
}


def test_a_helper_compiled_with_the_platforms_eager_backend_is_no_nested_compile(tmp_path: Path) -> None:
    """Under a capture that runs the embedding eagerly, vLLM's ``get_masked_input_and_mask``
    compiles with ``current_platform.simple_compile_backend``, ``"eager"`` on vllm-ascend's NPU
    platform (the preset's ``eager-backends``): no graph of its own, no GL101. A helper with
    torch's default backend compiles its own graph inside the capture (GL101)."""
    report = _lint(tmp_path, {**PLATFORMS, **EMBEDDING})
    assert _sites(report) == {("embedding.py", "GL101", 13)}


CPU_QUANT = {
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/layers/__init__.py": "",
    "vllm/model_executor/layers/quantization/__init__.py": """
        from vllm.model_executor.layers.quantization.awq import AWQConfig
        from vllm.model_executor.layers.quantization.cpu_wna16 import CPUAWQConfig

        QUANTIZATION_METHODS = {"awq": AWQConfig, "cpu_awq": CPUAWQConfig}


        def get_quantization_config(name):
            return QUANTIZATION_METHODS[name]
    """,
    "vllm/model_executor/layers/quantization/awq.py": """
        import torch


        class AWQLinearMethod:
            def apply(self, x):
                return x * torch.ones(x.shape[-1])


        class AWQConfig:
            def get_quant_method(self):
                return AWQLinearMethod()
    """,
    "vllm/model_executor/layers/quantization/cpu_wna16.py": """
        import torch


        class CPUAWQLinearMethod:
            def apply(self, x):
                out = torch.empty((x.size(0), 8), dtype=x.dtype)
                return torch.ops._C.cpu_gemm_wna16(x, out)


        class CPUAWQConfig:
            def get_quant_method(self):
                return CPUAWQLinearMethod()
    """,
    "vllm/model_executor/layers/linear.py": """
        from torch import nn
        from vllm.compilation.cuda_graph import CUDAGraphWrapper
        from vllm.model_executor.layers.quantization import get_quantization_config


        class Linear(nn.Module):
            def __init__(self, name):
                super().__init__()
                self.method = get_quantization_config(name)().get_quant_method()

            def forward(self, x):
                return self.method.apply(x)


        captured = CUDAGraphWrapper(Linear("awq"))
    """,
}


def test_a_cpu_platforms_quantization_method_picked_by_name_never_runs_under_capture(tmp_path: Path) -> None:
    """``CPUAWQConfig`` is in the registry beside ``AWQConfig``, picked by name on a CPU platform:
    its module is one of the preset's ``other-platform-modules``, so its host buffer is no
    finding; the CUDA method's is one."""
    report = _lint(tmp_path, {**PLATFORMS, **CPU_QUANT})
    assert _sites(report) == {("awq.py", "GL203", 6)}


ROTARY_BASE = {
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/layers/__init__.py": "",
    "vllm/model_executor/layers/rotary_embedding/__init__.py": "",
    "vllm/model_executor/layers/rotary_embedding/base.py": """
        import torch
        from torch import nn


        class RotaryEmbeddingBase(nn.Module):
            def __init__(self, dim: int):
                super().__init__()
                cache = self._compute_cos_sin_cache(dim)
                self.register_buffer("cos_sin_cache", cache, persistent=False)
                self.offsets = torch.zeros(dim)

            def _compute_cos_sin_cache(self, dim):
                return torch.ones(dim, 2)
    """,
    "vllm/model_executor/layers/rotary_embedding/vision.py": """
        from vllm.model_executor.layers.rotary_embedding.base import RotaryEmbeddingBase


        class VisionRotaryEmbedding(RotaryEmbeddingBase):
            def forward_native(self, query):
                cos_sin_cache = self.cos_sin_cache.to(query.device)
                return query * cos_sin_cache + self.offsets.to(query.device)

            forward = forward_native
    """,
    "vllm/model_executor/models/__init__.py": "",
    "vllm/model_executor/models/vision.py": """
        from vllm.compilation.cuda_graph import CUDAGraphWrapper
        from vllm.model_executor.layers.rotary_embedding.vision import VisionRotaryEmbedding

        captured = CUDAGraphWrapper(VisionRotaryEmbedding(8))
    """,
}


def test_a_buffer_a_base_class_registers_in_another_file_is_on_the_models_device(tmp_path: Path) -> None:
    """``self.cos_sin_cache`` of a rotary embedding is the buffer its base (another file)
    registers: moving it to the query's device copies nothing. ``self.offsets``, a plain tensor
    attribute the base makes with a factory, is not moved by ``model.to()``: still a copy."""
    report = _lint(tmp_path, {**PLATFORMS, **ROTARY_BASE})
    assert _sites(report) == {("vision.py", "GL201", 7)}


def test_a_long_operator_chain_is_read_without_recursing_per_operator(tmp_path: Path) -> None:
    """A tensor's device through ``a + b + ...`` is read by flattening the operators: 900 of
    them (legal Python, which libcst parses) once overflowed the stack (a GL000)."""
    chain = " + ".join(["t"] * 900)
    code = f"import torch\n\n\n@torch.compile\ndef f(t):\n    x = {chain}\n    return x.to(t.device)\n"
    report = _lint(tmp_path, {"app.py": code})
    assert {(f["code"], f["line"]) for f in report["findings"]} == {("GL201", 7)}


MAYBE_DISABLED = {
    "srt/__init__.py": "",
    "srt/topk.py": """
        import torch

        _is_npu = hasattr(torch, "npu") and torch.npu.is_available()


        @torch.compile(dynamic=True, disable=_is_npu)
        def grouped_topk(scores, k: int):
            return torch.topk(scores, k)


        @torch.compile(dynamic=True)
        def biased_topk(scores, bias, k: int):
            return torch.topk(scores + bias, k)


        @torch.compile(dynamic=True, disable=False)
        def renormalize(weights):
            return weights / weights.sum(-1, keepdim=True)


        masked = torch.compile(lambda ids: ids * 2, disable=_is_npu)


        def route(scores, bias):
            weights, ids = grouped_topk(scores, 2)
            biased_topk(scores, bias, 2)
            return renormalize(weights), masked(ids)


        def capture(graph, scores, bias):
            with torch.npu.graph(graph):
                return route(scores, bias)
    """,
}


def test_a_compile_that_may_be_disabled_is_no_nested_compile(tmp_path: Path) -> None:
    """sglang's helpers compile with ``@torch.compile(..., disable=_is_npu)``: on an NPU they run
    as they are inside the capture, so they compile nothing there (GL101 fired on 6 such sites
    on srt). ``disable=False`` and no ``disable=`` compile inside the capture (GL101)."""
    report = _lint(tmp_path, MAYBE_DISABLED)
    assert _sites(report) == {("topk.py", "GL101", 11), ("topk.py", "GL101", 16)}


# sglang's shape: one module holds every platform's vision attention backend, picked from a table
# by a name the server arguments give; a ViT graph runner captures the vision blocks.
VISION_BACKENDS = {
    "mmserve/__init__.py": "",
    "mmserve/attention/__init__.py": "",
    "mmserve/attention/vision.py": """
        import torch
        from torch import nn


        class VisionSdpaAttention(nn.Module):
            def forward(self, q, cu_seqlens):
                lengths = cu_seqlens.cpu()
                return q * lengths.shape[0]


        class VisionXPUAttention(nn.Module):
            def forward(self, q, cu_seqlens):
                return q * cu_seqlens.max().item()


        BACKENDS = {"sdpa": VisionSdpaAttention, "xpu_attn": VisionXPUAttention}


        class VisionAttention(nn.Module):
            def __init__(self, backend):
                super().__init__()
                self.impl = BACKENDS[backend]()

            def forward(self, q, cu_seqlens):
                return self.impl(q, cu_seqlens)
    """,
    "mmserve/vit_graph_runner.py": """
        import torch
        from mmserve.attention.vision import VisionAttention


        class ViTGraphRunner:
            def __init__(self, backend):
                self.block = VisionAttention(backend)

            def capture(self, graph, q, cu_seqlens):
                with torch.npu.graph(graph):
                    return self.block(q, cu_seqlens)
    """,
}


def test_a_backend_class_of_another_platform_in_a_shared_module_is_no_region(tmp_path: Path) -> None:
    """``other-platform-modules`` may name a class's functions (``...VisionXPUAttention.*``)
    where one module holds every platform's backend: its `.item()` is no finding; the SDPA
    backend's host copy, in the same module, still is one."""
    (tmp_path / "with").mkdir()
    (tmp_path / "without").mkdir()
    config = '[tool.graphlint]\nother-platform-modules = ["mmserve.attention.vision.VisionXPUAttention.*"]\n'
    assert _sites(_lint(tmp_path / "with", VISION_BACKENDS, config)) == {("vision.py", "GL201", 7)}
    assert _sites(_lint(tmp_path / "without", VISION_BACKENDS)) == {("vision.py", "GL201", 7), ("vision.py", "GL202", 13)}
