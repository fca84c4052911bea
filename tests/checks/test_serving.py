"""Serving frameworks' shapes (vLLM, vllm-ascend, sglang), written here as small projects: the
presets turn on by themselves, and the false alarms found on the real trees stay gone."""

from __future__ import annotations

import json
import textwrap
from contextlib import chdir
from pathlib import Path

import pytest

from graphlint.checks import value_graph
from tests.checks.conftest import found, lint_project, run_cli

VLLM_MODEL = """
    import torch
    from torch import nn
    from vllm.compilation.decorators import support_torch_compile
    from vllm.model_executor.layers.layernorm import RMSNorm


    class LlamaDecoderLayer(nn.Module):
        def forward(self, positions, hidden_states):
            n = hidden_states.shape[0]
            assert n % 8 == 0, f"{n} tokens is not a multiple of 8"
            if positions.shape[-1] != n:
                raise ValueError(f"positions {positions.shape[-1]} != tokens {n}")
            return hidden_states * 2


    @support_torch_compile
    class LlamaModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = LlamaDecoderLayer()
            self.norm = RMSNorm(4096)

        def forward(self, positions, hidden_states):
            return self.norm(self.layer(positions, hidden_states))


    @support_torch_compile(dynamic_arg_dims={"input_ids": 0})
    class LlamaForCausalLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = LlamaModel()

        def forward(self, input_ids, positions):
            return self.model(positions, input_ids)
"""


def _project(tmp_path: Path, files: dict[str, str], *args: str, pyproject: str = ""):
    return lint_project(tmp_path, {k: textwrap.dedent(v) for k, v in files.items()}, *args, pyproject=pyproject)


def test_vllm_preset_is_on_by_itself_and_support_torch_compile_nests_safely(tmp_path: Path) -> None:
    status, report = _project(tmp_path, {"models/llama.py": VLLM_MODEL})
    assert report["summary"]["presets"] == ["vllm"]
    assert report["findings"] == []  # no GL101 on the nested decorator, no GL102 in messages
    assert status == 0


CONFIGURED_JIT = {
    "mylib/__init__.py": "",
    "mylib/jit.py": """
        def jit(fn):
            return fn
    """,
    "models/norm.py": """
        import torch
        from torch import nn
        from mylib.jit import jit


        @jit
        def rms_norm(x, eps: float):
            return x * (x.pow(2).mean(-1, keepdim=True) + eps).rsqrt()


        class RMSNorm(nn.Module):
            def forward(self, x):
                return rms_norm(x, 1e-6)


        class Runner:
            def __init__(self, graph):
                self.model = RMSNorm()
                self.graph = graph

            def capture(self, x):
                with torch.npu.graph(self.graph):
                    return self.model(x)
    """,
}


def test_a_configured_entry_point_is_reported_but_never_removed_by_a_fix(tmp_path: Path) -> None:
    pyproject = """
        [tool.graphlint]
        presets = []
        compile-entrypoints = ["mylib.jit.jit"]
    """
    status, report = _project(tmp_path, CONFIGURED_JIT, pyproject=textwrap.dedent(pyproject))
    assert found(report) == {("GL101", 7)}  # the helper's own compile, inside the NPU graph capture
    assert report["findings"][0]["fixable"] is False
    before = (tmp_path / "models/norm.py").read_text()
    with chdir(tmp_path):
        assert run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", ".")[0] == 1
    assert (tmp_path / "models/norm.py").read_text() == before


def test_a_configured_model_level_entry_point_is_no_nested_compile(tmp_path: Path) -> None:
    """``LlamaModel``'s ``@support_torch_compile`` inside ``LlamaForCausalLM``'s: dynamo inlines it."""
    pyproject = """
        [tool.graphlint]
        presets = []
        compile-entrypoints = ["vllm.compilation.decorators.support_torch_compile"]
    """
    _, report = _project(tmp_path, {"models/llama.py": VLLM_MODEL}, pyproject=textwrap.dedent(pyproject))
    assert report["findings"] == []


def test_torch_compile_nested_is_still_removable(tmp_path: Path) -> None:
    code = """
        import torch

        @torch.compile
        def inner(x):
            return x + 1

        def outer(x):
            return inner(x) * 2

        graphed = torch.cuda.make_graphed_callables(outer, (torch.zeros(4),))
    """
    _, report = _project(tmp_path, {"app.py": code})
    assert [(f["code"], f["line"], f["fixable"]) for f in report["findings"]] == [("GL101", 4, True)]


VLLM_ASCEND_OP = """
    import torch
    from vllm.model_executor.layers.layernorm import RMSNorm


    class AscendRMSNorm(RMSNorm):
        def forward_oot(self, x, residual=None):
            bias = torch.zeros(x.shape[-1])
            return x + bias

        def forward_native(self, x, residual=None):
            return x.sum().item()
"""


def test_vllm_ascend_forward_oot_of_its_ops_runs_under_capture(tmp_path: Path) -> None:
    files = {"vllm_ascend/__init__.py": "", "vllm_ascend/ops/__init__.py": "", "vllm_ascend/ops/layernorm.py": VLLM_ASCEND_OP}
    _, report = _project(tmp_path, files, pyproject='[tool.graphlint]\npresets = ["vllm", "vllm_ascend"]\n')
    assert report["summary"]["presets"] == ["vllm", "vllm_ascend"]
    (finding,) = report["findings"]
    assert (finding["code"], finding["line"], finding["severity"]) == ("GL203", 8, "error")
    assert finding["region"]["chain"] == ["AscendRMSNorm.forward_oot"]


def test_the_vllm_ascend_preset_is_on_when_the_project_imports_it(tmp_path: Path) -> None:
    files = {"vllm_ascend/__init__.py": "", "vllm_ascend/ops/__init__.py": "", "vllm_ascend/ops/layernorm.py": VLLM_ASCEND_OP}
    _, report = _project(tmp_path, files)
    assert report["summary"]["presets"] == ["vllm", "vllm_ascend"]
    assert [(f["code"], f["line"]) for f in report["findings"]] == [("GL203", 8)]
    _, report = _project(tmp_path, files, pyproject="[tool.graphlint]\npresets = []\n")
    assert report["summary"]["presets"] == []


def test_customop_dispatch_reaches_forward_oot_from_a_compiled_model(tmp_path: Path) -> None:
    model = """
        from torch import nn
        from vllm.compilation.decorators import support_torch_compile
        from vllm_ascend.ops.layernorm import AscendRMSNorm

        @support_torch_compile
        class AscendModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = AscendRMSNorm()

            def forward(self, x):
                return self.norm(x)
    """
    files = {
        "vllm_ascend/__init__.py": "",
        "vllm_ascend/ops/__init__.py": "",
        "vllm_ascend/ops/layernorm.py": VLLM_ASCEND_OP,
        "vllm_ascend/models/__init__.py": "",
        "vllm_ascend/models/model.py": model,
    }
    pyproject = """
        [tool.graphlint]
        presets = ["vllm"]  # no capture roots: what the compiled model reaches, through dispatch
        [tool.graphlint.dispatch]
        "vllm.model_executor.layers.**" = ["forward_oot", "forward_native"]
    """
    _, report = _project(tmp_path, files, pyproject=textwrap.dedent(pyproject))
    chains = {(f["code"], f["line"]): f["region"]["chain"] for f in report["findings"]}
    assert chains == {
        ("GL203", 8): ["AscendModel.forward", "AscendRMSNorm.forward_oot"],
        ("GL202", 12): ["AscendModel.forward", "AscendRMSNorm.forward_native"],
    }


OVERRIDDEN_FORWARD = {
    "vllm/__init__.py": "",
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/custom_op.py": """
        from torch import nn


        class CustomOp(nn.Module):
            def forward(self, *args, **kwargs):
                return self._forward_method(*args, **kwargs)
    """,
    "vllm/model_executor/layers/__init__.py": "",
    "vllm/model_executor/layers/ops.py": """
        import torch
        from vllm.model_executor.custom_op import CustomOp


        class ShortConv(CustomOp):
            def forward(self, x):
                return torch.ops.vllm.short_conv(x)  # an opaque custom op, not forward_cuda

            def forward_cuda(self, x):
                return x.sum().item()


        class FastGelu(CustomOp):
            def forward_cuda(self, x):
                return x[x > 0]
    """,
    "vllm/model_executor/models/__init__.py": "",
    "vllm/model_executor/models/conv.py": """
        from torch import nn
        from vllm.compilation.decorators import support_torch_compile
        from vllm.model_executor.layers.ops import FastGelu, ShortConv


        @support_torch_compile
        class ConvModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = ShortConv()
                self.act = FastGelu()

            def forward(self, x):
                return self.act(self.conv(x))
    """,
}


def test_customop_dispatch_stops_at_a_class_that_overrides_forward(tmp_path: Path) -> None:
    """vLLM's ``ShortConv`` defines its own ``forward`` (its custom op): calling it never runs
    ``CustomOp.forward``'s choice, so its ``forward_cuda`` is no part of the compiled model; an op
    without an override still dispatches."""
    _, report = _project(tmp_path, OVERRIDDEN_FORWARD)
    assert report["summary"]["presets"] == ["vllm"]
    found = {(f["path"], f["line"], f["code"]): f["region"]["chain"] for f in report["findings"]}
    assert found == {("vllm/model_executor/layers/ops.py", 16, "GL202"): ["ConvModel.forward", "FastGelu.forward_cuda"]}


SGLANG_MODEL = """
    import torch
    from torch import nn
    from sglang.srt.layers.logits_processor import LogitsProcessor


    class LlamaForCausalLM(nn.Module):
        def forward(self, input_ids, positions, forward_batch):
            logits = input_ids.float()
            logits[logits < 0] = float("-inf")
            return logits[logits > 0]


    class Phi3ForCausalLM(LlamaForCausalLM):
        pass


    EntryClass = [LlamaForCausalLM, Phi3ForCausalLM]
"""


def test_sglang_entry_classes_are_captured_in_a_namespace_package(tmp_path: Path) -> None:
    files = {"python/sglang/__init__.py": "", "python/sglang/srt/models/llama.py": SGLANG_MODEL}
    _, report = _project(tmp_path, files, pyproject='[tool.graphlint]\npresets = ["sglang"]\n')
    assert report["summary"]["presets"] == ["sglang"]
    assert [(f["code"], f["line"], f["severity"], f["region"]["kind"]) for f in report["findings"]] == [
        ("GL202", 11, "error", "capture")  # the read through a mask; the scalar store is not one
    ]


def test_entry_class_with_a_decorated_forward_is_captured_when_the_solve_stops_early(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every sglang model's forward is @torch.no_grad(): through the value flow the class's
    # ``forward`` holds the method only after the decorator is decided, which waited for the
    # whole solve; on sglang's srt the solve stops at its budget first and 163 of 224 EntryClass
    # roots reached nothing (a GL001 on the class). The entry now finds the def through the MRO.
    model = """
        import torch
        from torch import nn


        class LlamaForCausalLM(nn.Module):
            @torch.no_grad()
            def forward(self, input_ids, positions, forward_batch):
                return input_ids[input_ids > 0]


        class MistralForCausalLM(LlamaForCausalLM):
            pass


        EntryClass = [LlamaForCausalLM, MistralForCausalLM]
    """
    files = {"python/sglang/__init__.py": "", "python/sglang/srt/models/llama.py": model}
    monkeypatch.setattr(value_graph, "WORK_BUDGET", 3)
    _, report = _project(tmp_path, files, pyproject='[tool.graphlint]\npresets = ["sglang"]\n')
    assert report["summary"]["notice"].startswith("value flow stopped")
    assert [(f["code"], f["line"], f["region"]["chain"]) for f in report["findings"]] == [
        ("GL202", 9, ["LlamaForCausalLM.forward"])
    ]


SGLANG_MM_MODEL = """
    import torch
    from torch import nn
    from sglang.srt.managers.mm_utils import embed_images


    class Qwen2VLForConditionalGeneration(nn.Module):
        @torch.no_grad()
        def forward(self, input_ids, positions, forward_batch):
            if forward_batch.contains_mm_inputs():
                input_ids = embed_images(input_ids, forward_batch)
            if not forward_batch.forward_mode.is_decode() and forward_batch.contains_image_inputs():
                positions = positions[positions > 0]
            if forward_batch.forward_mode.is_mixed():
                positions = positions[positions > 1]
            elif forward_batch.forward_mode.is_extend_or_draft_extend_or_mixed(True):
                positions = positions[positions > 2]
            else:
                positions = positions[positions > 3]
            from sglang.srt.model_executor.runner import get_is_capture_mode

            if get_is_capture_mode():
                pass
            else:
                positions = positions[positions > 4]
            return input_ids, positions


    EntryClass = Qwen2VLForConditionalGeneration


    @torch.compile
    def prefill(input_ids, forward_batch):
        if forward_batch.contains_mm_inputs():
            input_ids = input_ids[input_ids > 0]
        return input_ids
"""

SGLANG_MM_UTILS = """
    def embed_images(input_ids, forward_batch):
        return input_ids[input_ids > 0]
"""


def test_sglang_branches_a_capture_never_takes_are_not_captured(tmp_path: Path) -> None:
    # A capture batch is decode-like (capture-modes and capture-mode-calls in the preset) and
    # holds no multimodal inputs (capture-false-calls), and the runners set the capture-mode flag
    # (capture-true-calls): the multimodal, mixed-batch and not-capturing branches of a model's
    # forward are no capture region, nor what they call; a call with arguments may be true, and
    # compiled code (the prefill path under torch.compile) still takes the branch.
    files = {
        "python/sglang/__init__.py": "",
        "python/sglang/srt/models/qwen2_vl.py": SGLANG_MM_MODEL,
        "python/sglang/srt/managers/mm_utils.py": SGLANG_MM_UTILS,
    }
    _, report = _project(tmp_path, files, pyproject='[tool.graphlint]\npresets = ["sglang"]\n')
    assert [(f["path"], f["line"], f["region"]["kind"]) for f in report["findings"]] == [
        ("python/sglang/srt/models/qwen2_vl.py", 17, "capture"),
        ("python/sglang/srt/models/qwen2_vl.py", 19, "capture"),
        ("python/sglang/srt/models/qwen2_vl.py", 35, "compiled"),
    ]
    # without the preset's knowledge (none: a held preset would still decide branches) every
    # branch is captured
    _, plain = _project(
        tmp_path, files, pyproject='[tool.graphlint]\npresets = []\ncapture-exports = {"sglang.srt.models.*" = ["EntryClass"]}\n'
    )
    assert {(f["path"], f["line"]) for f in plain["findings"]} == {
        ("python/sglang/srt/managers/mm_utils.py", 3),
        *(("python/sglang/srt/models/qwen2_vl.py", line) for line in (13, 15, 17, 19, 25, 35)),
    }


def test_a_capture_context_bound_to_a_local_in_one_branch_is_a_capture_block(tmp_path: Path) -> None:
    # sglang's NPU graph backend picks its capture context per branch and then enters it: the
    # block is a capture entry (it was not: the live NPU capture path had no region at all).
    backend = """
        from functools import partial

        import torch


        class Model(torch.nn.Module):
            def forward(self, x):
                return x[x > 0]


        class NPUGraphBackend:
            def __init__(self, saver):
                self.saver = saver

            def capture_one(self, forward_fn):
                graph = torch.npu.NPUGraph()
                if self.saver is not None:
                    graph_ctx = partial(self.saver.cuda_graph, tag="graph")
                else:
                    graph_ctx = torch.npu.graph
                with graph_ctx(graph, pool=None):
                    return forward_fn()


        def capture(model: Model, x):
            NPUGraphBackend(None).capture_one(lambda: model(x))
    """
    _, report = _project(tmp_path, {"backend.py": backend})
    assert [(f["code"], f["line"], f["region"]["kind"], f["region"]["chain"]) for f in report["findings"]] == [
        ("GL202", 9, "capture", ["NPUGraphBackend.capture_one", "capture.<lambda1>", "Model.forward"])
    ]


def test_the_sglang_preset_is_on_by_itself(tmp_path: Path) -> None:
    """No configuration: a project that is (or imports) sglang gets its preset, as if configured."""
    files = {"python/sglang/__init__.py": "", "python/sglang/srt/models/llama.py": SGLANG_MODEL}
    status, report = _project(tmp_path, files)
    assert (report["summary"]["presets"], report["summary"]["held_presets"]) == (["sglang"], [])
    assert [(f["code"], f["line"], f["region"]["kind"]) for f in report["findings"]] == [("GL202", 11, "capture")]
    assert status == 1


def test_presets_can_be_chosen_and_a_wrong_name_is_a_usage_error(tmp_path: Path) -> None:
    files = {"python/sglang/__init__.py": "", "python/sglang/srt/models/llama.py": SGLANG_MODEL}
    status, report = _project(tmp_path, files, pyproject="[tool.graphlint]\npresets = []\n")
    assert report["summary"]["presets"] == [] and report["findings"] == [] and status == 0
    (tmp_path / "pyproject.toml").write_text('[tool.graphlint]\npresets = ["sglangg"]\n')
    with chdir(tmp_path):
        assert run_cli("check", "--no-cache", ".")[0] == 2


def test_user_roots_by_glob(tmp_path: Path) -> None:
    model = """
        from torch import nn

        class TinyForCausalLM(nn.Module):
            def forward(self, x):
                return x.tolist()

        class TinyTokenizer:
            def forward(self, x):
                return x.tolist()
    """
    pyproject = '[tool.graphlint]\ncapture-roots = ["mypkg.models.*.*ForCausalLM.forward"]\n'
    files = {"mypkg/__init__.py": "", "mypkg/models/__init__.py": "", "mypkg/models/tiny.py": model}
    _, report = _project(tmp_path, files, pyproject=pyproject)
    assert [(f["code"], f["line"], f["region"]["entry"]) for f in report["findings"]] == [
        ("GL202", 6, "mypkg/models/tiny.py:5")
    ]


def test_a_graph_wrapper_whose_runnable_is_unseen_gets_a_notice(tmp_path: Path) -> None:
    wrapper = """
        import torch


        class ACLGraphWrapper:
            def __init__(self, runnable, vllm_config, runtime_mode):
                self.runnable = runnable
                self.graph_pool = None

            def __call__(self, *args, **kwargs):
                graph = torch.npu.NPUGraph()
                with torch.npu.graph(graph, pool=self.graph_pool):
                    output = self.runnable(*args, **kwargs)
                return output
    """
    files = {"vllm_ascend/__init__.py": "", "vllm_ascend/compilation/__init__.py": "",
             "vllm_ascend/compilation/acl_graph.py": wrapper}
    status, report = _project(tmp_path, files)
    (notice,) = report["findings"]
    assert (notice["code"], notice["severity"], notice["line"]) == ("GL001", "info", 12)
    assert "`self.runnable(...)` on ACLGraphWrapper" in notice["message"] and "capture-roots" in notice["message"]
    assert status == 0  # a notice never fails the run


def test_host_side_bookkeeping_is_not_a_capture_copy(tmp_path: Path) -> None:
    runner = """
        import torch


        class InputBatch:
            def __init__(self, max_reqs, device):
                self.device = device

            def prepare(self, num_reqs, seq_lens):
                host_lens = torch.zeros(num_reqs, dtype=torch.int32, device="cpu", pin_memory=True)
                host_ids = torch.tensor(seq_lens, dtype=torch.int64, device="cpu")
                on_device = torch.zeros(num_reqs, device=self.device)
                return host_lens.to(self.device, non_blocking=True), host_ids.cpu(), on_device.to(self.device)


        @torch.compile(mode="reduce-overhead")
        def step(batch: InputBatch, num_reqs, seq_lens):
            return batch.prepare(num_reqs, seq_lens)
    """
    _, report = _project(tmp_path, {"runner.py": runner})
    assert [(f["code"], f["line"]) for f in report["findings"]] == [("GL201", 13)]  # host_lens.to(device) only
    assert report["findings"][0]["column"] == 16


def test_other_objects_compile_is_not_torch_compile(tmp_path: Path) -> None:
    backend = """
        import torch
        from torch import nn


        class CompilerManager:
            def compile(self, graph, example_inputs, additional_inductor_config, compilation_config):
                return graph


        class PiecewiseBackend(nn.Module):
            def __init__(self):
                super().__init__()
                self.compiler_manager = CompilerManager()

            def forward(self, graph, example_inputs):
                for shape in (1, 2, 4):
                    self.compiler_manager.compile(graph, example_inputs, {}, None)
                return graph
    """
    status, report = _project(tmp_path, {"backends.py": backend})
    assert report["findings"] == [] and status == 0


def test_custom_ops_are_opaque(tmp_path: Path) -> None:
    ops = """
        import torch
        from torch import nn, ops


        @torch.library.impl("mylib::rms_norm", "npu")
        def rms_norm_impl(x):
            return x * x.sum().item()


        def rms_norm(x):
            return x.sum().item()


        class Block(nn.Module):
            def forward(self, x):
                return torch.ops.mylib.rms_norm(x) + ops.mylib.rms_norm(x)


        model = torch.compile(Block(), mode="reduce-overhead")
    """
    _, report = _project(tmp_path, {"ops.py": ops})
    assert report["findings"] == []


def test_a_file_reached_through_a_symlink_is_reported_once(tmp_path: Path) -> None:
    code = "import torch\n\n@torch.compile(mode='reduce-overhead')\ndef step(x):\n    return x.sum().item()\n"
    _project(tmp_path, {"pkg/step.py": code})
    (tmp_path / "pkg/alias.py").symlink_to(tmp_path / "pkg/step.py")
    (tmp_path / "linked").symlink_to(tmp_path / "pkg", target_is_directory=True)
    with chdir(tmp_path):
        status, out = run_cli("check", "--no-cache", "--format", "json", "pkg", "linked", "pkg/step.py")
    import json

    report = json.loads(out)
    assert [(f["path"], f["code"]) for f in report["findings"]] == [("pkg/alias.py", "GL202")] or [
        (f["path"], f["code"]) for f in report["findings"]
    ] == [("pkg/step.py", "GL202")]
    assert report["summary"]["files"] == 1 and status == 1


def test_every_preset_file_parses_and_says_when_it_applies() -> None:
    from graphlint.checks.presets import all_presets

    presets = all_presets()
    assert set(presets) >= {"vllm", "vllm_ascend", "sglang"}
    for preset in presets.values():
        assert preset.summary and preset.detect, preset.name
    vllm = presets["vllm"].knowledge
    assert vllm.nesting_safe_entrypoints == ("vllm.compilation.decorators.support_torch_compile",)
    assert set(vllm.nesting_safe_entrypoints) <= set(vllm.compile_entrypoints)


def test_dotted_globs_stay_within_a_name_unless_doubled() -> None:
    from graphlint.checks.presets import glob_pattern

    one = glob_pattern("pkg.models.*.*ForCausalLM.forward")
    assert one.match("pkg.models.llama.LlamaForCausalLM.forward")
    assert one.match("src.pkg.models.llama.LlamaForCausalLM.forward")  # a namespace package's path
    assert not one.match("pkg.models.llama.sub.LlamaForCausalLM.forward")
    assert not one.match("otherpkg.models.llama.LlamaForCausalLM.forward")
    assert glob_pattern("pkg.ops.**.forward_oot").match("pkg.ops.fused_moe.experts.Experts.forward_oot")


def test_a_malformed_knowledge_key_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.graphlint]\ndispatch = ["forward_oot"]\n')
    (tmp_path / "app.py").write_text("x = 1\n")
    with chdir(tmp_path):
        assert run_cli("check", "--no-cache", ".")[0] == 2


# vLLM's shape: a class decorator that compiles the model's forward, patches the class's
# ``__init__`` / ``__call__`` with functions that forward ``*args, **kwargs`` to the originals
# (one pair shared by every decorated model), and models whose layers come from a helper with a
# lambda, a layer type given as a parameter default or by a subclass.
PATCHING_DECORATOR = """
    def support_torch_compile(cls=None, *, dynamic_arg_dims=None):
        def decorate(cls):
            return _patch(cls)

        if cls is not None:
            return decorate(cls)
        return decorate


    def _patch(cls):
        old_init = cls.__init__

        def __init__(self, *args, vllm_config=None, prefix="", **kwargs):
            old_init(self, *args, vllm_config=vllm_config, prefix=prefix, **kwargs)
            self.compiled = False

        def __call__(self, *args, **kwargs):
            return self.forward(*args, **kwargs)

        cls.__init__ = __init__
        cls.__call__ = __call__
        return cls
"""
LAYER_HELPERS = """
    import torch


    class MissingLayer(torch.nn.Identity):
        pass


    def make_layers(num_layers, layer_fn, prefix):
        start, end = 0, num_layers
        return start, end, torch.nn.ModuleList(
            [MissingLayer() for _ in range(start)]
            + [layer_fn(prefix=f"{prefix}.{i}") for i in range(start, end)]
            + [MissingLayer() for _ in range(end, num_layers)]
        )
"""
DECODER_MODELS = """
    from itertools import islice

    from torch import nn
    from vllm.compilation.decorators import support_torch_compile
    from vllm.model_executor.models.utils import make_layers


    class LlamaDecoderLayer(nn.Module):
        def __init__(self, vllm_config, prefix=""):
            super().__init__()

        def forward(self, positions, hidden_states):
            return hidden_states * 2


    @support_torch_compile(dynamic_arg_dims={"input_ids": 0})
    class LlamaModel(nn.Module):
        def __init__(self, *, vllm_config, prefix="", layer_type=LlamaDecoderLayer):
            super().__init__()
            self.start_layer, self.end_layer, self.layers = make_layers(
                4, lambda prefix: layer_type(vllm_config=vllm_config, prefix=prefix), prefix=f"{prefix}.layers"
            )

        def forward(self, input_ids, positions):
            hidden_states = input_ids
            for layer in islice(self.layers, self.start_layer, self.end_layer):
                hidden_states = layer(positions, hidden_states)
            return hidden_states


    class QwenDecoderLayer(LlamaDecoderLayer):
        def forward(self, positions, hidden_states):
            return hidden_states + 1


    @support_torch_compile
    class QwenModel(nn.Module):
        def __init__(self, *, vllm_config, prefix=""):
            super().__init__()
            self.layers = nn.ModuleList([QwenDecoderLayer(vllm_config) for _ in range(2)])

        def forward(self, input_ids, positions):
            for layer in self.layers:
                input_ids = layer(positions, input_ids)
            return input_ids


    class LlamaForCausalLM(nn.Module):
        def __init__(self, *, vllm_config, prefix=""):
            super().__init__()
            self.model = LlamaModel(vllm_config=vllm_config, prefix=prefix)

        def forward(self, input_ids, positions):
            return self.model(input_ids, positions)
"""


def test_a_compile_decorator_named_by_a_preset_compiles_each_model_with_its_own_layers(tmp_path: Path) -> None:
    """The decorator's body is not followed (the preset says what it does): followed, its shared
    ``__init__`` carried every model's constructor arguments to every other model, and its
    ``__call__`` stood in front of ``forward``. A decorator call with keywords only
    (``support_torch_compile(dynamic_arg_dims=...)``) makes the decorator; it is no entry of its own."""
    files = {
        "vllm/__init__.py": "",
        "vllm/compilation/__init__.py": "",
        "vllm/compilation/decorators.py": PATCHING_DECORATOR,
        "vllm/model_executor/__init__.py": "",
        "vllm/model_executor/models/__init__.py": "",
        "vllm/model_executor/models/utils.py": LAYER_HELPERS,
        "vllm/model_executor/models/llama.py": DECODER_MODELS,
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    with chdir(tmp_path):
        status, out = run_cli("regions", "--format", "json", "--no-cache", "vllm")
    assert status == 0, out
    entries = {(e["path"], e["line"]): e["functions"] for e in json.loads(out)["entries"]}
    models = "vllm.model_executor.models.llama"
    assert entries == {
        ("vllm/model_executor/models/llama.py", 17): [f"{models}.LlamaDecoderLayer.forward", f"{models}.LlamaModel.forward"],
        ("vllm/model_executor/models/llama.py", 37): [f"{models}.QwenDecoderLayer.forward", f"{models}.QwenModel.forward"],
    }


ASCEND_WRAPPER = """
    import torch


    class ACLGraphWrapper:
        def __init__(self, runnable, vllm_config, runtime_mode=None):
            self.runnable = runnable
            self.graph = None
            self.output = None

        def __call__(self, *args, **kwargs):
            if self.graph is None:
                self.graph = torch.npu.NPUGraph()
                with torch.npu.graph(self.graph):
                    self.output = self.runnable(*args, **kwargs)
                return self.output
            torch.npu.current_stream().synchronize()  # before replay, outside the capture
            self.graph.replay()
            return self.output
"""
ASCEND_ATTENTION = """
    import torch


    def seq_lengths(cu_seqlens):
        return cu_seqlens.detach().cpu().view(-1).tolist()


    def device_lengths(lengths):
        return lengths.tolist()


    class Attention(torch.nn.Module):
        capturing = True

        def _cu_seqlens(self, bsz, q_len, cu_seqlens, is_capturing):
            # made on the host on purpose: the capture path must not sync to read it (the
            # parameter is rebound, so the name holds the model's tensor too, but not here)
            if is_capturing or cu_seqlens is None:
                cu_seqlens = torch.arange(0, (bsz + 1) * q_len, step=q_len, dtype=torch.int32, device="cpu")
                return cu_seqlens
            return cu_seqlens.cpu()

        def forward(self, q):
            host = seq_lengths(self._cu_seqlens(q.shape[0], q.shape[1], q.cumsum(0), self.capturing))
            on_device = device_lengths(q.sum(-1))
            return q * len(host) * len(on_device)
"""
ASCEND_RUNNER = """
    import torch
    from vllm_ascend.compilation.acl_graph import ACLGraphWrapper
    from vllm_ascend.ops.attention import Attention


    class ToyModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = Attention()

        def forward(self, x):
            return self.attn(x)


    class NPUModelRunner:
        def __init__(self, vllm_config, full_graph):
            self.vllm_config = vllm_config
            self.full_graph = full_graph

        def load_model(self):
            self.model = ToyModel()
            if self.full_graph:
                self.model = ACLGraphWrapper(self.model, self.vllm_config)

        def execute(self, x):
            return self.model(x)
"""


def ascend_files() -> dict[str, str]:
    """A small vllm-ascend: its graph wrapper, an attention op and the model runner."""
    return {
        "vllm_ascend/__init__.py": "",
        "vllm_ascend/compilation/__init__.py": "",
        "vllm_ascend/compilation/acl_graph.py": ASCEND_WRAPPER,
        "vllm_ascend/ops/__init__.py": "",
        "vllm_ascend/ops/attention.py": ASCEND_ATTENTION,
        "vllm_ascend/worker/__init__.py": "",
        "vllm_ascend/worker/model_runner.py": ASCEND_RUNNER,
    }


def test_vllm_ascend_wrapper_and_host_lengths_give_only_the_true_sync(tmp_path: Path) -> None:
    """vllm-ascend's two false-error classes: ``self.model = ACLGraphWrapper(self.model)`` hands
    the wrapper the model held before (never the wrapper, whose own ``synchronize()`` before
    replay then looked captured), and ``.cpu()`` / ``.tolist()`` of a tensor another method made
    with ``device="cpu"`` (also where it rebinds a parameter to it and returns the name: the
    name returned holds what the call just made). The ``.tolist()`` of a device tensor stays an
    error."""
    files = ascend_files()
    _, report = _project(tmp_path, files, pyproject='[tool.graphlint]\npresets = ["vllm", "vllm_ascend"]\n')
    assert [(f["path"], f["code"], f["line"], f["severity"]) for f in report["findings"]] == [
        ("vllm_ascend/ops/attention.py", "GL202", 10, "error"),
    ]
    assert report["findings"][0]["region"]["chain"] == ["ToyModel.forward", "Attention.forward", "device_lengths"]


OUTER_WRAPPER = """
    class XliteWrapper:
        def __init__(self, runnable, vllm_config):
            self.runnable = runnable

        def __call__(self, x):
            host = x.sum(-1).tolist()  # in the engine's own graph runner, outside any capture
            return self.runnable(x) * len(host)
"""
OUTER_RUNNERS = """
    from vllm_ascend.compilation.acl_graph import ACLGraphWrapper
    from vllm_ascend.worker.model_runner import ToyModel
    from vllm_ascend.xlite.wrapper import XliteWrapper


    class GraphRunner:
        def __init__(self, vllm_config, model):
            self.vllm_config = vllm_config
            self.model = model

        def load_model(self):
            self.model = ACLGraphWrapper(self.model, self.vllm_config)

        def execute(self, x):
            return self.model(x)


    class XliteRunner(GraphRunner):
        def load_model(self):
            {body}


    runner = XliteRunner(None, ToyModel())
    runner.load_model()
"""


@pytest.mark.parametrize(
    ("body", "captured"),
    [
        ("super().load_model()\n            self.model = XliteWrapper(self.model, self.vllm_config)", False),
        # the wrapper is made first: the base's ACLGraphWrapper captures it
        ("self.model = XliteWrapper(self.model, self.vllm_config)\n            super().load_model()", True),
    ],
    ids=["wrapped-after-super", "wrapped-before-super"],
)
def test_a_wrapper_an_override_adds_after_super_is_not_inside_the_base_wrapper(tmp_path: Path, body: str, captured: bool) -> None:
    """vllm-ascend's xlite runner: ``super().load_model()`` (which wraps the model in the capturing
    ``ACLGraphWrapper``), then ``self.model = XliteWrapper(self.model)``. The graph wrapper
    captures the model, never the wrapper made after it, whose host-side ``.tolist()`` was an
    error. Made before ``super().load_model()``, the base's wrapper does capture it."""
    files = {
        **ascend_files(),
        "vllm_ascend/xlite/__init__.py": "",
        "vllm_ascend/xlite/wrapper.py": OUTER_WRAPPER,
        "vllm_ascend/xlite/runner.py": OUTER_RUNNERS.replace("{body}", body),
    }
    _, report = _project(tmp_path, files, pyproject='[tool.graphlint]\npresets = ["vllm", "vllm_ascend"]\n')
    found = {(f["path"], f["code"], f["line"]) for f in report["findings"]}
    assert ("vllm_ascend/ops/attention.py", "GL202", 10) in found  # the model is still captured
    assert (("vllm_ascend/xlite/wrapper.py", "GL202", 7) in found) is captured


VLLM_CUSTOM_OP = """
    from torch import nn
    from vllm.platforms import current_platform


    class CustomOp(nn.Module):
        def __init__(self):
            super().__init__()
            self._forward_method = self.dispatch_forward()

        def forward(self, *args, **kwargs):
            return self._forward_method(*args, **kwargs)

        def forward_native(self, *args, **kwargs):
            raise NotImplementedError

        def forward_cpu(self, *args, **kwargs):
            return self.forward_native(*args, **kwargs)

        def dispatch_forward(self):
            if current_platform.is_cpu():
                return self.forward_cpu
            elif current_platform.is_xpu():
                return self.forward_xpu
            elif current_platform.is_out_of_tree():
                return self.forward_oot
            return self.forward_cuda
"""

VLLM_NORM = """
    import torch
    from vllm.model_executor.custom_op import CustomOp


    class RMSNorm(CustomOp):
        def forward_cuda(self, x):
            return x * torch.ones(x.shape[-1])

        def forward_cpu(self, x):
            return x * x.abs().max().item()

        def forward_xpu(self, x):
            return x[x > 0]
"""

VLLM_CAPTURED_MODEL = """
    from torch import nn
    from vllm.compilation.cuda_graph import CUDAGraphWrapper
    from vllm.model_executor.layers.layernorm import RMSNorm


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = RMSNorm()

        def forward(self, x):
            return self.norm(x)


    captured = CUDAGraphWrapper(Model())
"""


def test_a_custom_op_under_cuda_graph_capture_never_runs_its_cpu_kernel(tmp_path: Path) -> None:
    """vLLM's ``CustomOp.dispatch_forward`` returns ``forward_cpu`` on a CPU platform: under CUDA
    or NPU graph capture that branch is never taken (the preset's ``not-dispatched``), so the
    host sync of ``forward_cpu`` and the boolean mask of ``forward_xpu`` are no findings; the
    host tensor of ``forward_cuda`` is one."""
    files = {
        "vllm/__init__.py": "",
        "vllm/platforms.py": "current_platform = None\n",
        "vllm/compilation/__init__.py": "",
        "vllm/compilation/cuda_graph.py": "class CUDAGraphWrapper:\n    def __init__(self, runnable):\n        self.runnable = runnable\n",
        "vllm/model_executor/__init__.py": "",
        "vllm/model_executor/custom_op.py": VLLM_CUSTOM_OP,
        "vllm/model_executor/layers/__init__.py": "",
        "vllm/model_executor/layers/layernorm.py": VLLM_NORM,
        "vllm/model_executor/models/__init__.py": "",
        "vllm/model_executor/models/model.py": VLLM_CAPTURED_MODEL,
    }
    _, report = _project(tmp_path, files)
    assert report["summary"]["presets"] == ["vllm"]
    chains = {(f["path"], f["code"], f["line"]): f["region"]["chain"] for f in report["findings"]}
    assert chains == {("vllm/model_executor/layers/layernorm.py", "GL203", 8): ["Model.forward", "RMSNorm.forward_cuda"]}


# sglang's shape: an NPU graph runner in sglang's own code captures a vision block whose attention
# backend comes from a table of every platform's; a user's own runner in a project that imports
# sglang captures its own model.
SGLANG_RUNNER = {
    "python/sglang/__init__.py": "",
    "python/sglang/srt/vision.py": """
        import torch
        from torch import nn


        class CudaAttention(nn.Module):
            def forward(self, q, lengths):
                return q * lengths.max().item()


        class AscendAttention(nn.Module):
            def forward(self, q, lengths):
                return q + 1


        BACKENDS = {"fa3": CudaAttention, "ascend_attn": AscendAttention}


        class VisionBlock(nn.Module):
            def __init__(self, backend):
                super().__init__()
                self.attn = BACKENDS[backend]()

            def forward(self, q, lengths):
                return self.attn(q, lengths)
    """,
    "python/sglang/srt/vit_npu_graph_runner.py": """
        import torch
        from sglang.srt.vision import VisionBlock


        class ViTNpuGraphRunner:
            def __init__(self, backend):
                self.block = VisionBlock(backend)

            def create_graph(self, graph, q, lengths):
                with torch.npu.graph(graph):
                    return self.block(q, lengths)
    """,
    "python/myserve/runner.py": """
        import torch
        import sglang


        def step(x):
            return x * x.sum().item()


        def capture(graph, x):
            with torch.npu.graph(graph):
                return step(x)
    """,
}


def test_an_opt_in_frameworks_own_captures_are_named_not_analysed(tmp_path: Path, held_sglang: None) -> None:
    """A preset that ships opt-in (sglang's, made so here): its framework's own graph runner's
    capture is not walked (without the preset its backend table would give it every platform's
    attention: a false error), and a GL001 notice and the coverage line say so; the project's own
    capture is still analysed. With the preset on, sglang's capture is walked like any other."""
    (tmp_path / "off").mkdir()
    (tmp_path / "on").mkdir()
    _, report = _project(tmp_path / "off", SGLANG_RUNNER)
    assert report["summary"]["presets"] == []
    found = {(f["path"], f["line"], f["code"]): f["message"] for f in report["findings"]}
    assert set(found) == {
        ("python/myserve/runner.py", 7, "GL202"),  # the project's own capture is analysed
        ("python/sglang/srt/vit_npu_graph_runner.py", 11, "GL001"),
    }
    assert 'presets = ["sglang"]' in found["python/sglang/srt/vit_npu_graph_runner.py", 11, "GL001"]
    with chdir(tmp_path / "off"):
        status, text = run_cli("check", ".", "--no-cache")
    assert '1 capture block(s) of sglang not analysed: its preset is opt-in (presets = ["sglang"])' in text
    _, report = _project(tmp_path / "on", SGLANG_RUNNER, pyproject='[tool.graphlint]\npresets = ["sglang"]\n')
    found = {(f["path"], f["line"], f["code"]) for f in report["findings"]}
    assert found == {("python/myserve/runner.py", 7, "GL202"), ("python/sglang/srt/vision.py", 8, "GL202")}
