"""sglang's code that cannot run on the NPU although no platform test guards it (plat13): the
DeepSeek-V4 attention backend (its metadata imports ``sgl_kernel``), the DeepGEMM MoE runner's
GEMMs (``deep_gemm`` is bound only where DeepGEMM is enabled), the CUDA MLA path that the
Ascend attention handler never picks, and KTransformers' MoE wrapper (it reads a CUDA stream). Small projects in sglang's module layout (the preset names
sglang's own modules), no code copied; each checked on the NPU and on CUDA, where all of it runs."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.checks.conftest import lint_project

RUNNER_ROOT = 'capture-roots = ["sglang.srt.model_executor.runner.DecodeRunner.run_once"]\n'

# The decode runner captures the metadata step of the backend the registry built by name: the
# Ascend backend on the NPU, the DeepSeek-V4 one (whose metadata imports sgl_kernel's FlashMLA
# before it builds the compressors' data) for DeepSeek-V4 on CUDA. And the MoE runner core the
# MoE layer was built with, DeepGEMM's among them.
BACKENDS = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/layers/__init__.py": "",
    "sglang/srt/layers/attention/__init__.py": "",
    "sglang/srt/layers/attention/dsv4/__init__.py": "",
    "sglang/srt/layers/attention/dsv4/compressor.py": """
        import torch


        def create_paged_compressor_data(seq_lens_cpu):
            return torch.tensor(seq_lens_cpu)
    """,
    "sglang/srt/layers/attention/deepseek_v4_backend.py": """
        from sglang.srt.layers.attention.dsv4.compressor import create_paged_compressor_data


        def _create_flashmla_metadata():
            import sgl_kernel.flash_mla as flash_mla

            return flash_mla.get_mla_metadata()[0]


        class DeepseekV4AttnBackend:
            def __init__(self, runner):
                self.runner = runner

            def init_forward_metadata_in_graph(self, forward_batch):
                metadata = _create_flashmla_metadata()
                return metadata, create_paged_compressor_data(forward_batch.seq_lens_cpu)


        class DeepseekV4MultiStepBackend(DeepseekV4AttnBackend):
            def init_forward_metadata_in_graph(self, forward_batch):
                return forward_batch.seq_lens.max().item()
    """,
    "sglang/srt/hardware_backend/__init__.py": "",
    "sglang/srt/hardware_backend/npu/__init__.py": "",
    "sglang/srt/hardware_backend/npu/attention/__init__.py": "",
    "sglang/srt/hardware_backend/npu/attention/ascend_backend.py": """
        import torch


        class AscendAttnBackend:
            def __init__(self, runner):
                self.runner = runner

            def init_forward_metadata_in_graph(self, forward_batch):
                return torch.arange(forward_batch.batch_size)
    """,
    "sglang/srt/layers/attention/attention_registry.py": """
        ATTENTION_BACKENDS = {}


        def register_attention_backend(name):
            def decorator(fn):
                ATTENTION_BACKENDS[name] = fn
                return fn

            return decorator


        @register_attention_backend("ascend")
        def create_ascend_backend(runner):
            from sglang.srt.hardware_backend.npu.attention.ascend_backend import AscendAttnBackend

            return AscendAttnBackend(runner)


        @register_attention_backend("dsv4")
        def create_dsv4_backend(runner):
            from sglang.srt.layers.attention.deepseek_v4_backend import DeepseekV4AttnBackend

            return DeepseekV4AttnBackend(runner)


        @register_attention_backend("dsv4_mtp")
        def create_dsv4_draft_backend(runner):
            from sglang.srt.layers.attention.deepseek_v4_backend import DeepseekV4MultiStepBackend

            return DeepseekV4MultiStepBackend(runner)
    """,
    "sglang/srt/layers/moe/__init__.py": "",
    "sglang/srt/layers/moe/moe_runner/__init__.py": "",
    "sglang/srt/layers/moe/moe_runner/deep_gemm.py": """
        import torch


        class DeepGemmRunnerCore:
            def run(self, hidden_states, masked):
                if masked:
                    return self._run_masked_gemm(hidden_states)
                return self._run_contiguous_gemm(hidden_states)

            def _run_masked_gemm(self, hidden_states):
                return hidden_states.cuda()

            def _run_contiguous_gemm(self, hidden_states):
                return hidden_states.cpu()
    """,
    "sglang/srt/model_executor/__init__.py": "",
    "sglang/srt/model_executor/runner.py": """
        from sglang.srt.layers.attention.attention_registry import ATTENTION_BACKENDS
        from sglang.srt.layers.moe.moe_runner.deep_gemm import DeepGemmRunnerCore


        class DecodeRunner:
            def __init__(self, backend_name, model_runner):
                self.attn_backend = ATTENTION_BACKENDS[backend_name](model_runner)
                self.runner_core = DeepGemmRunnerCore()

            def run_once(self, forward_batch, hidden_states):
                self.attn_backend.init_forward_metadata_in_graph(forward_batch)
                return self.runner_core.run(hidden_states, forward_batch.masked)
    """,
}

# Found on CUDA: the DeepSeek-V4 backends' sites, the Ascend backend's, both DeepGEMM paths.
DSV4 = {("compressor.py", "GL203", 5), ("deepseek_v4_backend.py", "GL202", 21)}
ASCEND = ("ascend_backend.py", "GL203", 9)
DEEP_GEMM_MASKED = ("deep_gemm.py", "GL201", 11)
DEEP_GEMM_CONTIGUOUS = ("deep_gemm.py", "GL201", 14)

# DeepSeek's MLA attention asks the handler registered for the server's attention backend which
# forward method to run; the Ascend handler answers only the NPU's methods.
MLA = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/models/__init__.py": "",
    "sglang/srt/models/deepseek_common/__init__.py": "",
    "sglang/srt/models/deepseek_common/attention_forward_methods.py": """
        from enum import Enum, auto


        class AttnForwardMethod(Enum):
            MLA = auto()
            MLA_NPU = auto()
            DSA_NPU = auto()
    """,
    "sglang/srt/models/deepseek_common/attention_backend_handler.py": """
        from sglang.srt.models.deepseek_common.attention_forward_methods import AttnForwardMethod

        HANDLERS = {}


        def handle_attention_ascend(attn, forward_batch):
            if hasattr(attn, "indexer"):
                return AttnForwardMethod.DSA_NPU
            return AttnForwardMethod.MLA_NPU


        def handle_attention_triton(attn, forward_batch):
            return AttnForwardMethod.MLA


        HANDLERS["ascend"] = handle_attention_ascend
        HANDLERS["triton"] = handle_attention_triton
    """,
    "sglang/srt/models/deepseek_v2.py": """
        import torch
        from torch import nn

        from sglang.srt.models.deepseek_common.attention_backend_handler import HANDLERS
        from sglang.srt.models.deepseek_common.attention_forward_methods import AttnForwardMethod


        class DeepseekV2AttentionMLA(nn.Module):
            def __init__(self, backend):
                super().__init__()
                self.backend = backend

            def dispatch_attn_forward_method(self, forward_batch):
                return HANDLERS[self.backend](self, forward_batch)

            def forward_absorb_prepare(self, hidden_states):
                return hidden_states * hidden_states.max().item()

            def forward_mla_prepare_npu(self, hidden_states):
                return hidden_states * hidden_states.sum().item()

            def forward(self, hidden_states, forward_batch):
                method = self.dispatch_attn_forward_method(forward_batch)
                if method == AttnForwardMethod.MLA:
                    return self.forward_absorb_prepare(hidden_states)
                elif method == AttnForwardMethod.MLA_NPU:
                    return self.forward_mla_prepare_npu(hidden_states)
                raise NotImplementedError


        class DeepseekV2ForCausalLM(nn.Module):
            def __init__(self, backend):
                super().__init__()
                self.attn = DeepseekV2AttentionMLA(backend)

            def forward(self, input_ids, positions, forward_batch):
                return self.attn(input_ids, forward_batch)


        EntryClass = DeepseekV2ForCausalLM
    """,
}
ABSORB = ("deepseek_v2.py", "GL202", 17)
MLA_NPU = ("deepseek_v2.py", "GL202", 20)


def _sites(root: Path, files: dict[str, str], platform: str, extra: str = "") -> set[tuple[str, str, int]]:
    root.mkdir(parents=True)
    pyproject = f'[tool.graphlint]\npresets = ["sglang"]\nplatform = "{platform}"\n{extra}'
    _, report = lint_project(root, {k: textwrap.dedent(v).lstrip("\n") for k, v in files.items()}, pyproject=pyproject)
    return {(f["path"].rsplit("/", 1)[-1], f["code"], f["line"]) for f in report["findings"]}


def test_the_deepseek_v4_backends_and_deep_gemms_gemms_run_only_on_cuda(tmp_path: Path) -> None:
    """The preset's NPU ``other-platform-modules`` name the DeepSeek-V4 backend classes and the
    DeepGEMM runner's masked GEMM: no region enters them on the NPU, nor the compressor helper
    only they call. The Ascend backend and DeepGEMM's contiguous GEMM (which returns before
    DeepGEMM when it has no rows) are still checked; on CUDA all of them are."""
    npu = _sites(tmp_path / "npu", BACKENDS, "npu", RUNNER_ROOT)
    assert ASCEND in npu and DEEP_GEMM_CONTIGUOUS in npu
    assert not DSV4 & npu
    assert DEEP_GEMM_MASKED not in npu
    cuda = _sites(tmp_path / "cuda", BACKENDS, "cuda", RUNNER_ROOT)
    assert DSV4 | {ASCEND, DEEP_GEMM_MASKED, DEEP_GEMM_CONTIGUOUS} <= cuda


def test_on_the_npu_deepseeks_mla_attention_runs_only_the_npus_methods(tmp_path: Path) -> None:
    """The preset's ``capture-call-results`` for ``dispatch_attn_forward_method`` hold per
    platform: on the NPU (the Ascend handler) the CUDA MLA path is never captured, on CUDA it is."""
    npu = _sites(tmp_path / "npu", MLA, "npu")
    assert MLA_NPU in npu
    assert ABSORB not in npu
    assert {ABSORB, MLA_NPU} <= _sites(tmp_path / "cuda", MLA, "cuda")


# (plat16) KTransformers' expert-parallel wrapper around the MoE layer's method: TP rank 0 hands the
# CPU experts its tokens on the current stream, read as a CUDA stream, and every rank masks them
# out with a compiled helper before the wrapped method runs.
KT_WRAPPER = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/distributed.py": """
        import torch.distributed as dist


        def get_tensor_model_parallel_rank():
            return dist.get_rank()
    """,
    "sglang/srt/layers/__init__.py": "",
    "sglang/srt/layers/moe/__init__.py": "",
    "sglang/srt/layers/moe/kt_ep_wrapper.py": """
        import torch

        from sglang.srt.distributed import get_tensor_model_parallel_rank


        @torch.compile(dynamic=True)
        def mask_cpu_expert_ids(topk_ids, num_gpu_experts):
            topk_ids[topk_ids >= num_gpu_experts] = -1
            return topk_ids


        class KTEPWrapperMethod:
            def __init__(self, gpu_method, cpu_experts, num_gpu_experts):
                self.gpu_method = gpu_method
                self.cpu_experts = cpu_experts
                self.num_gpu_experts = num_gpu_experts
                self.tp_rank = get_tensor_model_parallel_rank()

            def submit(self, x, topk_ids):
                stream = torch.cuda.current_stream(x.device).cuda_stream
                self.cpu_experts.submit_forward(x, topk_ids, stream)

            def apply(self, layer, x, topk_ids):
                if self.tp_rank == 0:
                    self.submit(x, topk_ids)
                masked = mask_cpu_expert_ids(topk_ids, self.num_gpu_experts)
                return self.gpu_method.apply(layer, x, masked)
    """,
    "sglang/srt/layers/moe/fused_moe.py": """
        from torch import nn

        from sglang.srt.layers.moe.kt_ep_wrapper import KTEPWrapperMethod


        class UnquantizedFusedMoEMethod:
            def apply(self, layer, x, topk_ids):
                return x * topk_ids.max().item()


        class FusedMoE(nn.Module):
            def __init__(self, cpu_experts):
                super().__init__()
                if cpu_experts is not None:
                    self.quant_method = KTEPWrapperMethod(UnquantizedFusedMoEMethod(), cpu_experts, 8)
                else:
                    self.quant_method = UnquantizedFusedMoEMethod()

            def forward(self, x, topk_ids):
                return self.quant_method.apply(self, x, topk_ids)
    """,
    "sglang/srt/models/__init__.py": "",
    "sglang/srt/models/moe_model.py": """
        from torch import nn

        from sglang.srt.layers.moe.fused_moe import FusedMoE


        class MoEForCausalLM(nn.Module):
            def __init__(self, cpu_experts):
                super().__init__()
                self.experts = FusedMoE(cpu_experts)

            def forward(self, input_ids, positions, forward_batch):
                return self.experts(input_ids, positions)


        EntryClass = MoEForCausalLM
    """,
}
KT_MASK = ("kt_ep_wrapper.py", "GL101", 6)
UNQUANTIZED = ("fused_moe.py", "GL202", 8)


def test_ktransformers_wrapper_runs_no_forward_on_the_npu(tmp_path: Path) -> None:
    """The preset's NPU ``other-platform-modules`` name ``KTEPWrapperMethod.apply``: rank 0 reads
    ``.cuda_stream`` of a torch_npu stream there, so no NPU capture holds its compiled mask. The
    method it wraps, which the layer also runs unwrapped, is still checked; on CUDA both are."""
    npu = _sites(tmp_path / "npu", KT_WRAPPER, "npu")
    assert UNQUANTIZED in npu
    assert KT_MASK not in npu
    assert {KT_MASK, UNQUANTIZED} <= _sites(tmp_path / "cuda", KT_WRAPPER, "cuda")
