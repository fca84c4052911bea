"""sglang's shapes for the false alarms of its srt tree with the preset forced (sglang10b):
vision attention backends picked by name from a table that the ViT graph runners refuse, the
eager branch of ``SGLANG_VIT_ENABLE_CUDA_GRAPH``, other platforms' backends and dispatch
methods, and factories inside ``with x.device:``. Written here as small projects in sglang's
module layout (the preset names sglang's own modules), no code copied."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.checks.conftest import lint_project

SGLANG = '[tool.graphlint]\npresets = ["sglang"]\n'

# One module holds every platform's vision attention backend, picked from a table by the name the
# server arguments give; the NPU ViT graph runner refuses any name but "ascend_attn" inside its
# capture; each backend has an eager branch for when the ViT graph is off.
VIT = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/environ.py": """
        import os


        class EnvBool:
            def __init__(self, name):
                self.name = name

            def get(self):
                return os.environ.get(self.name) == "1"


        class Envs:
            SGLANG_VIT_ENABLE_CUDA_GRAPH = EnvBool("SGLANG_VIT_ENABLE_CUDA_GRAPH")


        envs = Envs()
    """,
    "sglang/srt/server_args.py": """
        class ServerArgs:
            mm_attention_backend = None


        def get_global_server_args():
            return ServerArgs()
    """,
    "sglang/srt/layers/__init__.py": "",
    "sglang/srt/layers/attention/__init__.py": "",
    "sglang/srt/layers/attention/vision.py": """
        import torch
        from torch import nn

        from sglang.srt.environ import envs
        from sglang.srt.server_args import get_global_server_args


        class VisionSdpaAttention(nn.Module):
            def forward(self, q, cu_seqlens, **kwargs):
                return q * cu_seqlens.cpu().shape[0]


        class VisionAscendAttention(nn.Module):
            def forward(self, q, cu_seqlens, **kwargs):
                if envs.SGLANG_VIT_ENABLE_CUDA_GRAPH.get():
                    lengths = cu_seqlens
                else:
                    lengths = cu_seqlens.to("cpu")
                return q * cu_seqlens.max().item() + lengths.shape[0]


        class VisionAMXAttention(nn.Module):
            def forward(self, q, cu_seqlens, **kwargs):
                return q * cu_seqlens.max().item()


        QKV_BACKEND_IMPL = {
            "sdpa": VisionSdpaAttention,
            "ascend_attn": VisionAscendAttention,
            "amx_attn": VisionAMXAttention,
        }


        class VisionAttention(nn.Module):
            def __init__(self, backend=None):
                super().__init__()
                name = get_global_server_args().mm_attention_backend or backend or "sdpa"
                self.qkv_backend = QKV_BACKEND_IMPL[name]()

            def forward(self, q, cu_seqlens, **kwargs):
                return self.qkv_backend.forward(q, cu_seqlens, **kwargs)
    """,
    "sglang/srt/hardware_backend/__init__.py": "",
    "sglang/srt/hardware_backend/npu/__init__.py": "",
    "sglang/srt/hardware_backend/npu/vit_npu_graph_runner.py": """
        import torch

        from sglang.srt.layers.attention.vision import VisionAttention
        from sglang.srt.server_args import get_global_server_args


        class ViTNpuGraphRunner:
            def __init__(self):
                self.attn = VisionAttention()

            def create_graph(self, graph, q, cu_seqlens):
                backend = get_global_server_args().mm_attention_backend
                with torch.npu.graph(graph):
                    if backend == "ascend_attn":
                        lengths = cu_seqlens
                    else:
                        raise RuntimeError("Not supported ViT attention backend")
                    return self.attn(q, lengths, output_ws=q)
    """,
}


def _findings(root: Path, files: dict[str, str], pyproject: str) -> dict[tuple[str, str, int], str]:
    """(file name, code, line) → severity."""
    root.mkdir(parents=True)
    _, report = lint_project(root, {k: textwrap.dedent(v).lstrip("\n") for k, v in files.items()}, pyproject=pyproject)
    return {(f["path"].rsplit("/", 1)[-1], f["code"], f["line"]): f["severity"] for f in report["findings"]}


def _sites(root: Path, files: dict[str, str], pyproject: str) -> set[tuple[str, str, int]]:
    return set(_findings(root, files, pyproject))


# sglang's graph runners capture what sglang.srt.models.* export as EntryClass: configured by hand
# with the preset off (the bare run), or by the preset.
EXPORTS = '[tool.graphlint]\npresets = []\n[tool.graphlint.capture-exports]\n"sglang.srt.models.*" = ["EntryClass"]\n'


def _bare_and_preset(tmp_path: Path, files: dict[str, str]) -> tuple[set, set]:
    return _sites(tmp_path / "bare", files, EXPORTS), _sites(tmp_path / "preset", files, SGLANG)


RUNNER_ROOT = 'capture-roots = ["sglang.srt.hardware_backend.npu.vit_npu_graph_runner.ViTNpuGraphRunner.create_graph"]\n'


def test_the_vit_graph_runner_captures_only_the_backend_it_accepts_and_its_graph_branch(tmp_path: Path) -> None:
    """With the preset, the NPU ViT runner's capture reaches the Ascend backend's graph branch
    only: the SDPA backend it refuses (``outside-captures``), the CPU AMX backend
    (``other-platform-modules``, a class glob) and the Ascend backend's eager branch under
    ``SGLANG_VIT_ENABLE_CUDA_GRAPH`` (``capture-true-calls``) are no findings; the `.item()` its
    graph branch still reaches is one. Without that knowledge (the same capture, configured by
    hand with the preset off) every backend is a finding."""
    bare = _sites(tmp_path / "bare", VIT, "[tool.graphlint]\npresets = []\n" + RUNNER_ROOT)
    assert {s for s in bare if s[0] == "vision.py"} == {
        ("vision.py", "GL201", 10),  # SDPA: refused by the runner
        ("vision.py", "GL201", 18),  # Ascend's eager branch
        ("vision.py", "GL202", 19),  # Ascend's graph branch: a real sync
        ("vision.py", "GL202", 24),  # CPU AMX
    }
    assert {s for s in _sites(tmp_path / "preset", VIT, SGLANG) if s[0] == "vision.py"} == {("vision.py", "GL202", 19)}


def test_outside_captures_leaves_compiled_regions_alone(tmp_path: Path) -> None:
    """``outside-captures`` in a project's own configuration: the capture no longer enters the
    named backend (its host copy was an error there), a ``torch.compile`` of the same attention
    still does (a warning)."""
    files = {
        **VIT,
        "sglang/srt/compiled.py": """
            import torch

            from sglang.srt.layers.attention.vision import VisionAttention

            encoder = torch.compile(VisionAttention("sdpa"))
        """,
    }
    config = "[tool.graphlint]\npresets = []\n" + RUNNER_ROOT
    named = 'outside-captures = ["sglang.srt.layers.attention.vision.VisionSdpaAttention.*"]\n'
    assert _findings(tmp_path / "plain", files, config)["vision.py", "GL201", 10] == "error"
    assert _findings(tmp_path / "named", files, config + named)["vision.py", "GL201", 10] == "warning"


# sglang's MultiPlatformOp picks the method of the platform it runs on once, and calls it through
# an attribute; a model a module exports as EntryClass is captured by the graph runners.
MULTI_PLATFORM = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/layers/__init__.py": "",
    "sglang/srt/layers/utils/__init__.py": "",
    "sglang/srt/layers/utils/multi_platform.py": """
        from torch import nn

        _is_cuda = True
        _is_cpu = False


        class MultiPlatformOp(nn.Module):
            def __init__(self):
                super().__init__()
                self._forward_method = self.dispatch_forward()

            def forward(self, *args, **kwargs):
                return self._forward_method(*args, **kwargs)

            def forward_native(self, *args, **kwargs):
                raise NotImplementedError

            def forward_cuda(self, *args, **kwargs):
                raise NotImplementedError

            def forward_npu(self, *args, **kwargs):
                return self.forward_native(*args, **kwargs)

            def forward_cpu(self, *args, **kwargs):
                return self.forward_native(*args, **kwargs)

            def dispatch_forward(self):
                if _is_cuda:
                    return self.forward_cuda
                elif _is_cpu:
                    return self.forward_cpu
                return self.forward_npu
    """,
    "sglang/srt/layers/moe.py": """
        import torch

        from sglang.srt.layers.utils.multi_platform import MultiPlatformOp


        class MoEMethod(MultiPlatformOp):
            def forward_native(self, x):
                return x * 2

            def forward_cuda(self, x):
                return x + 1

            def forward_cpu(self, x):
                return x * torch.tensor([x.shape[0]]).to(x.device)
    """,
    "sglang/srt/models/__init__.py": "",
    "sglang/srt/models/tiny.py": """
        from torch import nn

        from sglang.srt.layers.moe import MoEMethod


        class TinyForCausalLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.moe = MoEMethod()

            def forward(self, input_ids, positions, forward_batch):
                return self.moe(input_ids)


        EntryClass = TinyForCausalLM
    """,
}


def test_the_cpu_method_a_multi_platform_op_dispatches_to_is_never_captured(tmp_path: Path) -> None:
    """The preset's ``not-dispatched`` for ``MultiPlatformOp``: the op's ``forward_cpu`` (a host
    tensor moved to the device on each call) is no capture finding; its ``forward_cuda`` still
    runs in the capture (the model is reached)."""
    bare, preset = _bare_and_preset(tmp_path, MULTI_PLATFORM)
    assert ("moe.py", "GL201", 14) in bare
    assert preset == set()


# sglang's mllama batches image inputs under ``with forward_batch.out_cache_loc.device:``: the
# factories inside make their tensors there.
DEVICE_CONTEXT = {
    "app/__init__.py": "",
    "app/runner.py": """
        import torch


        def batch_images(forward_batch, n):
            with forward_batch.out_cache_loc.device:
                images = torch.zeros(n, 3, 8, 8)
                ids = torch.ones(n, dtype=torch.int64)

                def later():
                    return torch.zeros(n)

            return images, ids, later(), torch.ones(n)


        def capture(graph, forward_batch):
            with torch.npu.graph(graph):
                return batch_images(forward_batch, 4)
    """,
}


def test_a_factory_inside_with_a_device_makes_its_tensor_there(tmp_path: Path) -> None:
    """A ``torch.device`` as a context manager is the factories' default device: no GL203 for
    them; one after the block, and one in a function defined inside it (which runs later, not
    in the block), still are."""
    sites = _sites(tmp_path / "app", DEVICE_CONTEXT, '[tool.graphlint]\npresets = []\n')
    assert {s for s in sites if s[1] == "GL203"} == {("runner.py", "GL203", 10), ("runner.py", "GL203", 12)}


# DeepGEMM's JIT warm-up: the first time a key is met it compiles for every m and records the key;
# the graph runners run each forward eagerly before they capture it.
DEEP_GEMM = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/layers/__init__.py": "",
    "sglang/srt/layers/deep_gemm_wrapper/__init__.py": "",
    "sglang/srt/layers/deep_gemm_wrapper/compile_utils.py": """
        import torch

        _INITIALIZATION_DICT = {}


        def _compile_deep_gemm_one_type_all(n, k):
            for m in range(1, 4):
                torch.empty(m, k, device="cuda").sum()
            torch.cuda.current_stream().synchronize()


        def maybe_compile(n, k):
            if _INITIALIZATION_DICT.get((n, k)) is None:
                _INITIALIZATION_DICT[(n, k)] = True
                _compile_deep_gemm_one_type_all(n, k)


        def gemm(x, w):
            maybe_compile(w.shape[0], w.shape[1])
            return x @ w.t()
    """,
    "sglang/srt/models/__init__.py": "",
    "sglang/srt/models/tiny.py": """
        import torch
        from torch import nn

        from sglang.srt.layers.deep_gemm_wrapper.compile_utils import gemm


        class TinyForCausalLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = nn.Parameter(torch.empty(4, 4))

            def forward(self, input_ids, positions, forward_batch):
                return gemm(input_ids, self.weight)


        EntryClass = TinyForCausalLM
    """,
}


def test_deep_gemms_jit_warm_up_is_never_captured(tmp_path: Path) -> None:
    """The preset's ``outside-captures`` names the warm-up: its stream sync is no capture
    finding with the preset, and one with the same capture configured by hand."""
    bare, preset = _bare_and_preset(tmp_path, DEEP_GEMM)
    assert ("compile_utils.py", "GL202", 9) in bare
    assert preset == set()


# sglang's Ernie 4.5 VL MoE layer: a local set from torch's capture check, then flags that the
# branch a capture takes sets to False, tested further down.
CAPTURING_LOCALS = {
    "app/__init__.py": "",
    "app/moe.py": """
        import torch


        def route(hidden_states, visual_token_mask):
            capturing = torch.cuda.is_current_stream_capturing()
            if visual_token_mask is not None and not capturing:
                all_visual = visual_token_mask.all()
                any_visual = visual_token_mask.any()
            else:
                all_visual = False
                any_visual = False
            if all_visual:
                return hidden_states * 2
            elif any_visual:
                text = hidden_states[~visual_token_mask]
                return text.sum().item()
            else:
                return hidden_states + 1


        def relabel(hidden_states, visual_token_mask):
            seen = False
            for _ in range(2):
                if seen:
                    return hidden_states[visual_token_mask].sum().item()
                seen = visual_token_mask.any()
            return hidden_states


        def rebound(hidden_states, mask):
            flagged = False

            def mark():
                nonlocal flagged
                flagged = True

            mark()
            if flagged:
                return hidden_states[mask].sum().item()
            return hidden_states


        def walrus(hidden_states, mask):
            found = False
            [found := bool(m) for m in mask.tolist()]
            if found:
                return hidden_states.max().item()
            return hidden_states


        def stored(state, seen, hidden_states, mask):
            capturing = torch.cuda.is_current_stream_capturing()
            state.capturing = capturing
            seen[capturing] = True
            if not capturing:
                return hidden_states[mask].sum().item()
            return hidden_states


        def capture(graph, state, seen, hidden_states, mask):
            with torch.cuda.graph(graph):
                return (
                    route(hidden_states, mask),
                    relabel(hidden_states, mask),
                    rebound(hidden_states, mask),
                    walrus(hidden_states, mask),
                    stored(state, seen, hidden_states, mask),
                )
    """,
}


def test_a_local_a_capture_always_binds_to_false_guards_no_captured_code(tmp_path: Path) -> None:
    """``capturing = torch.cuda.is_current_stream_capturing()`` is True in every capture, so the
    flags are False there and the ``elif any_visual:`` branch (a mask read and a sync) is never
    captured, with no preset. A flag another binding may change before the test (in a loop)
    decides nothing: that sync is still found; so does one a nested function rebinds through
    ``nonlocal``, and one a ``:=`` in a comprehension binds. A store into an object
    (``state.capturing = capturing``, ``seen[capturing] = True``) rebinds no name."""
    sites = _sites(tmp_path / "app", CAPTURING_LOCALS, "[tool.graphlint]\npresets = []\n")
    assert {s[2] for s in sites if s[0] == "moe.py" and s[1] == "GL202"} == {25, 39, 45, 47}  # 45: the .tolist()


# sglang's standard dispatcher: a module flag built from the platform checks at import.
PLATFORM_FLAGS = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/utils.py": """
        import torch


        def is_hip():
            return torch.version.hip is not None


        def get_bool_env_var(name):
            return False
    """,
    "sglang/srt/layers/__init__.py": "",
    "sglang/srt/layers/dispatcher.py": """
        import torch

        from sglang.srt.utils import get_bool_env_var, is_hip

        _is_hip = is_hip()
        _use_aiter = get_bool_env_var("SGLANG_USE_AITER") and _is_hip


        class StandardDispatcher:
            def __init__(self, mapping):
                self.mapping = mapping

            def dispatch(self, topk_ids):
                if _use_aiter:
                    return (self.mapping >= 0).to(torch.int32).to(device="cuda")
                return self.mapping[topk_ids]


        def relabel(topk_ids, mapping):
            _use_aiter = topk_ids.numel() > 0
            if _use_aiter:
                return mapping.to(device="cuda")
            return topk_ids
    """,
    "sglang/srt/models/__init__.py": "",
    "sglang/srt/models/tiny.py": """
        import torch
        from torch import nn

        from sglang.srt.layers.dispatcher import StandardDispatcher, relabel


        class TinyForCausalLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.dispatcher = StandardDispatcher(torch.arange(4))

            def forward(self, input_ids, positions, forward_batch):
                return relabel(self.dispatcher.dispatch(input_ids), self.dispatcher.mapping)


        EntryClass = TinyForCausalLM
    """,
}


def test_a_module_flag_of_another_platform_guards_no_captured_code(tmp_path: Path) -> None:
    """With the preset (``is_hip`` is false in every capture it checks), the module's
    ``_use_aiter`` is False under capture and the ROCm-only move is no finding; a function that
    binds a local of the same name decides nothing from the module's."""
    bare, preset = _bare_and_preset(tmp_path, PLATFORM_FLAGS)
    assert {s for s in bare if s[0] == "dispatcher.py"} == {("dispatcher.py", "GL201", 15), ("dispatcher.py", "GL201", 22)}
    assert {s for s in preset if s[0] == "dispatcher.py"} == {("dispatcher.py", "GL201", 22)}


# A local bound to a test of forward modes: known per mode (the preset's capture modes).
MODE_LOCAL = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/models/__init__.py": "",
    "sglang/srt/models/tiny.py": """
        from torch import nn


        class TinyForCausalLM(nn.Module):
            def forward(self, input_ids, positions, forward_batch):
                pruned = (
                    forward_batch.forward_mode.is_decode_or_idle()
                    or forward_batch.forward_mode.is_target_verify()
                    or forward_batch.forward_mode.is_draft_extend_v2()
                )
                if pruned:
                    return input_ids * 2
                elif forward_batch.forward_mode.is_dllm_extend():
                    return input_ids + 1
                else:
                    return input_ids[: int(positions.max().item())]


        EntryClass = TinyForCausalLM
    """,
}


def test_a_local_bound_to_a_test_of_modes_is_known_per_mode(tmp_path: Path) -> None:
    """``pruned`` is true in every capture mode but DLLM_EXTEND, the ``elif`` takes that one, so
    the ``else`` (a sync) runs in no capture mode: no finding with the preset, one without the
    modes (the same capture configured by hand)."""
    bare, preset = _bare_and_preset(tmp_path, MODE_LOCAL)
    assert ("tiny.py", "GL202", 16) in bare
    assert preset == set()


# sglang's llava: the image path of an extend batch (TARGET_VERIFY is one, and is captured) loops
# over forward_batch.mm_inputs, None in every capture batch.
NONE_LOOP = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/models/__init__.py": "",
    "sglang/srt/models/tiny.py": """
        from torch import nn


        class TinyForCausalLM(nn.Module):
            def forward(self, input_ids, positions, forward_batch):
                image_inputs = forward_batch.mm_inputs
                if forward_batch.forward_mode.is_extend():
                    offsets = []
                    for im in image_inputs:
                        offsets.append(im.offset)
                    start = positions[forward_batch.extend_start_loc].cpu().numpy()
                    return input_ids * len(start)
                for token in input_ids.tolist():
                    positions = positions + token
                return input_ids + positions


        EntryClass = TinyForCausalLM
    """,
}


def test_what_follows_a_loop_over_what_a_capture_batch_leaves_none_is_never_captured(tmp_path: Path) -> None:
    """``image_inputs`` is ``forward_batch.mm_inputs`` (``capture-none-attributes``): the loop
    raises in every capture, so the host copy after it is no finding with the preset; a loop
    over a tensor's values beside it still syncs."""
    bare, preset = _bare_and_preset(tmp_path, NONE_LOOP)
    assert {("tiny.py", "GL201", 11), ("tiny.py", "GL202", 13)} <= bare
    assert preset == {("tiny.py", "GL202", 13)}
