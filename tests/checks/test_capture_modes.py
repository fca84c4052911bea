"""What a framework's graph capture never runs, stated as data: attributes known under capture
(``capture-false-attributes``, ``capture-none-attributes``), calls with any arguments
(``name(...)`` in ``capture-false-calls``), and the modes a capture runs in
(``capture-modes``, ``capture-mode-calls``), decided through ``or`` / ``and`` / ``not``,
``elif`` chains and ``if ...: return``. Small projects in sglang's shape (its logits processor,
context-parallel prefill and forward modes), written here."""

from __future__ import annotations

import textwrap
from contextlib import chdir
from pathlib import Path

import pytest

from tests.checks.conftest import lint_project, run_cli

# Each host sync is ``x[x > N]`` (GL202): N names the branch. The comment says whether a capture
# (in sglang's forward modes, with no logprobs asked and no context parallelism) runs it.
LOGITS_PROCESSOR = """
    import torch
    from torch import nn


    class LogitsMetadata:
        def __init__(self, forward_mode, extend_return_logprob, is_prefill_only):
            self.forward_mode = forward_mode
            self.extend_return_logprob = extend_return_logprob
            self.is_prefill_only = is_prefill_only

        @classmethod
        def from_forward_batch(cls, forward_batch):
            if forward_batch.forward_mode.is_extend() and forward_batch.return_logprob:
                lens = forward_batch.extend_seq_lens
                forward_batch.extend_seq_lens = lens[lens > 1]  # not captured
            return cls(forward_batch.forward_mode, forward_batch.return_logprob, forward_batch.is_prefill_only)


    class LogitsProcessor(nn.Module):
        def forward(self, hidden_states, forward_batch):
            indices = forward_batch.multi_item_delimiter_indices
            logits_metadata = LogitsMetadata.from_forward_batch(forward_batch)
            if indices is not None and logits_metadata.is_prefill_only:
                return hidden_states[hidden_states > 2]  # not captured
            if logits_metadata.forward_mode.is_dllm_extend():
                return hidden_states[hidden_states > 3]  # captured: DLLM_EXTEND
            pruned = self._get_pruned_states(hidden_states, logits_metadata)
            if not logits_metadata.extend_return_logprob:
                return pruned
            return pruned[pruned > 4]  # not captured

        def _get_pruned_states(self, hidden_states, logits_metadata):
            if (
                logits_metadata.forward_mode.is_decode_or_idle()
                or logits_metadata.forward_mode.is_target_verify()
                or logits_metadata.forward_mode.is_draft_extend_v2()
            ):
                return hidden_states
            elif logits_metadata.forward_mode.is_extend() and not logits_metadata.extend_return_logprob:
                return hidden_states[hidden_states > 5]  # not captured: forward returns first in DLLM_EXTEND
            else:
                return hidden_states[hidden_states > 6]  # not captured
"""

CP_UTILS = """
    def can_cp_split(seq_len, cp_size, forward_batch):
        return cp_size > 1 and forward_batch.forward_mode.is_context_parallel_extend()


    def prepare_context_parallel_metadata(seq_lens):
        return seq_lens[seq_lens > 7]  # not captured
"""

MODEL = """
    import torch
    from torch import nn
    from sglang.srt.layers.logits_processor import LogitsProcessor
    from sglang.srt.layers.utils.cp_utils import can_cp_split, prepare_context_parallel_metadata


    class DeepseekV2ForCausalLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.logits_processor = LogitsProcessor()

        @torch.no_grad()
        def forward(self, input_ids, positions, forward_batch):
            if can_cp_split(len(input_ids), 2, forward_batch):
                forward_batch.attn_cp_metadata = prepare_context_parallel_metadata(forward_batch.seq_lens)
            if forward_batch.attn_cp_metadata is not None:
                positions = positions[positions > 8]  # not captured
            if forward_batch.forward_mode.is_decode():
                positions = positions + 1
            elif forward_batch.forward_mode.is_idle():
                return positions
            else:
                positions = positions[positions > 9]  # captured: TARGET_VERIFY, DLLM_EXTEND, DRAFT_EXTEND_V2
            if not forward_batch.forward_mode.is_decode_or_idle() and not forward_batch.forward_mode.is_target_verify():
                positions = positions[positions > 10]  # captured: DLLM_EXTEND, DRAFT_EXTEND_V2
            if forward_batch.forward_mode.is_extend(True):
                positions = positions[positions > 11]  # captured: an argument, not decided
            return self.logits_processor(positions, forward_batch)


    EntryClass = DeepseekV2ForCausalLM


    @torch.compile
    def prefill(hidden_states, forward_batch):
        if forward_batch.return_logprob:
            hidden_states = hidden_states[hidden_states > 12]  # compiled: still taken
        return hidden_states
"""

FILES = {
    "python/sglang/__init__.py": "",
    "python/sglang/srt/layers/logits_processor.py": LOGITS_PROCESSOR,
    "python/sglang/srt/layers/utils/cp_utils.py": CP_UTILS,
    "python/sglang/srt/models/deepseek_v2.py": MODEL,
}


def _lines(marker: str) -> set[tuple[str, int]]:
    """(path, line) of every ``x[x > N]`` whose comment starts with ``marker``."""
    return {
        (path, number)
        for path, text in FILES.items()
        for number, line in enumerate(textwrap.dedent(text).splitlines(), 1)
        if f"# {marker}" in line
    }


def _findings(tmp_path: Path, pyproject: str) -> set[tuple[str, int]]:
    files = {name: textwrap.dedent(text) for name, text in FILES.items()}
    _, report = lint_project(tmp_path, files, pyproject=pyproject)
    assert all(f["code"] == "GL202" for f in report["findings"]), report["findings"]
    return {(f["path"], f["line"]) for f in report["findings"]}


def test_a_capture_runs_only_its_modes_and_never_reads_logprobs_nor_context_parallel_metadata(tmp_path: Path) -> None:
    # sglang's LogitsProcessor: `is_decode_or_idle() or is_target_verify() or is_draft_extend_v2()`
    # is true in every capture mode but DLLM_EXTEND, and forward returns before the call in
    # DLLM_EXTEND, so neither the `elif` nor the `else` (input logprobs) is captured; nor what follows
    # `if not extend_return_logprob: return`, nor the multi-item-scoring branch (`... and
    # is_prefill_only`), nor the context-parallel prefill (`can_cp_split(...)`, then
    # `attn_cp_metadata is not None`). The compiled prefill helper still takes its branch.
    found = _findings(tmp_path, '[tool.graphlint]\npresets = ["sglang"]\n')
    assert found == _lines("captured") | _lines("compiled")
    assert _lines("captured") and _lines("not captured")
    # without that knowledge (the preset's capture-exports alone, and no preset: a held one would
    # still decide branches) every branch is captured
    plain = _findings(tmp_path, '[tool.graphlint]\npresets = []\ncapture-exports = {"sglang.srt.models.*" = ["EntryClass"]}\n')
    assert plain == _lines("captured") | _lines("not captured") | _lines("compiled")


PROJECT = """
    import torch


    class Runner:
        def capture(self, batch):
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                return step(batch)


    def step(batch):
        if batch.mode.is_prefill() or batch.has_images:
            return batch.ids[batch.ids > 1]  # not captured
        if batch.mode.is_verify():
            return batch.ids[batch.ids > 2]  # captured
        if batch.cache is None:
            return batch.ids
        return batch.ids[batch.ids > 3]  # not captured
"""


def test_capture_modes_and_attributes_in_a_project_configuration(tmp_path: Path) -> None:
    pyproject = """
        [tool.graphlint]
        capture-modes = ["DECODE", "VERIFY"]
        capture-false-attributes = ["batch.has_images"]
        capture-none-attributes = ["batch.cache"]

        [tool.graphlint.capture-mode-calls]
        "mode.is_prefill" = ["PREFILL"]
        "mode.is_verify" = ["VERIFY"]
    """
    _, report = lint_project(tmp_path, {"app.py": textwrap.dedent(PROJECT)}, pyproject=textwrap.dedent(pyproject))
    lines = textwrap.dedent(PROJECT).splitlines()
    assert [lines[f["line"] - 1].strip() for f in report["findings"]] == ["return batch.ids[batch.ids > 2]  # captured"]


@pytest.mark.parametrize(
    "setting",
    [
        'capture-false-attribute = ["batch.has_images"]',  # a typo of the key
        'capture-mode-calls = ["mode.is_prefill"]',  # a list, not a table
        'capture-modes = "DECODE"',  # a string, not a list
        'capture-call-results = ["self.pick(...)"]',  # a list, not a table
    ],
)
def test_a_malformed_capture_key_is_a_usage_error(tmp_path: Path, setting: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.graphlint]\n{setting}\n")
    (tmp_path / "app.py").write_text("x = 1\n")
    with chdir(tmp_path):
        assert run_cli("check", "--no-cache", ".")[0] == 2


# sglang's DeepSeek attention in its shape: a registry of handlers picks the forward method from
# the forward mode; the preset says which methods a capture gets (``capture-call-results``), so
# the prefill methods' branches are never captured. The enum lives in a package of its own and is
# imported through the package's ``__init__``, as sglang does.
FORWARD_METHODS = """
    from enum import IntEnum, auto


    class AttnForwardMethod(IntEnum):
        MHA = auto()
        MLA = auto()
        MHA_NPU = auto()
        MLA_NPU = auto()
"""

ATTENTION = """
    import torch
    from torch import nn
    from sglang.srt.models.deepseek_common.attention_forward_methods import AttnForwardMethod


    class AttentionBackendRegistry:
        _handlers = {}

        @classmethod
        def register(cls, name, handler):
            cls._handlers[name] = handler

        @classmethod
        def get_handler(cls, name):
            return cls._handlers.get(name, cls._handlers.get("triton"))


    def handle_attention_ascend(attn, forward_batch):
        if forward_batch.forward_mode.is_extend() and not forward_batch.forward_mode.is_target_verify():
            return AttnForwardMethod.MHA_NPU
        return AttnForwardMethod.MLA_NPU


    def handle_attention_triton(attn, forward_batch):
        if forward_batch.forward_mode.is_extend_without_speculative():
            return AttnForwardMethod.MHA
        return AttnForwardMethod.MLA


    AttentionBackendRegistry.register("ascend", handle_attention_ascend)
    AttentionBackendRegistry.register("triton", handle_attention_triton)


    class DeepseekV2AttentionMLA(nn.Module):
        def __init__(self, backend):
            super().__init__()
            self.backend = backend

        def dispatch_attn_forward_method(self, forward_batch):
            handler = AttentionBackendRegistry.get_handler(self.backend)
            return handler(self, forward_batch)

        def forward(self, hidden_states, forward_batch):
            method = self.dispatch_attn_forward_method(forward_batch)
            if method == AttnForwardMethod.MHA:
                return hidden_states[hidden_states > 1]  # not captured
            elif method == AttnForwardMethod.MHA_NPU:
                return hidden_states[hidden_states > 2]  # not captured
            elif method == AttnForwardMethod.MLA_NPU:
                hidden_states = hidden_states[hidden_states > 3]  # captured
            if self.dispatch_attn_forward_method(forward_batch) != AttnForwardMethod.MLA:
                hidden_states = hidden_states[hidden_states > 4]  # captured: MLA_NPU
            if method is AttnForwardMethod.MHA:
                hidden_states = hidden_states[hidden_states > 5]  # not captured
            if method == self.backend:
                hidden_states = hidden_states[hidden_states > 6]  # captured: not a member
            return hidden_states


    class DeepseekV2ForCausalLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = DeepseekV2AttentionMLA("ascend")

        def forward(self, hidden_states, forward_batch):
            return self.attn(hidden_states, forward_batch)


    EntryClass = DeepseekV2ForCausalLM
"""

METHOD_FILES = {
    "python/sglang/__init__.py": "",
    "python/sglang/srt/models/deepseek_common/attention_forward_methods/__init__.py": (
        "from .forward_methods import AttnForwardMethod\n"
    ),
    "python/sglang/srt/models/deepseek_common/attention_forward_methods/forward_methods.py": FORWARD_METHODS,
    "python/sglang/srt/models/deepseek_v2.py": ATTENTION,
}

CAPTURE_RESULTS = """
    [tool.graphlint]
    presets = []
    capture-exports = {"sglang.srt.models.*" = ["EntryClass"]}

    [tool.graphlint.capture-call-results]
    "self.dispatch_attn_forward_method(...)" = [
        "sglang.srt.models.deepseek_common.attention_forward_methods.AttnForwardMethod.MLA",
        "sglang.srt.models.deepseek_common.attention_forward_methods.AttnForwardMethod.MLA_NPU",
    ]
"""


def test_a_comparison_with_what_a_capture_call_returns_is_decided(tmp_path: Path) -> None:
    # `method == AttnForwardMethod.MHA_NPU` is false in every capture: the call (and the name
    # bound to it) is one of MLA / MLA_NPU there. A comparison with what is not a member of that
    # class (`self.backend`) is not decided; nor would one be without the knowledge.
    text = textwrap.dedent(ATTENTION)
    files = {name: textwrap.dedent(body) for name, body in METHOD_FILES.items()}
    marked = {
        marker: {n for n, line in enumerate(text.splitlines(), 1) if f"# {marker}" in line}
        for marker in ("captured", "not captured")
    }

    def found(pyproject: str) -> set[int]:
        _, report = lint_project(tmp_path, files, pyproject=textwrap.dedent(pyproject))
        assert all(f["code"] == "GL202" and f["path"].endswith("deepseek_v2.py") for f in report["findings"])
        return {f["line"] for f in report["findings"]}

    assert marked["captured"] and marked["not captured"]
    assert found(CAPTURE_RESULTS) == marked["captured"]
    plain = CAPTURE_RESULTS.split("[tool.graphlint.capture-call-results]")[0]
    assert found(plain) == marked["captured"] | marked["not captured"]


# sglang's Sarvam MLA attention (its own enum, a module-level picker) and frozen-KV MTP draft
# worker in their shape: the runner marks the capture batch's metadata ready before it captures.
SARVAM = """
    from enum import IntEnum, auto

    from torch import nn


    class AttnForwardMethod(IntEnum):
        MLA_SEPARATE_ROPE = auto()
        MLA_CONCAT_ROPE = auto()
        MHA_PREFILL = auto()


    def get_attn_forward_method(server_args, forward_batch):
        if forward_batch.forward_mode.is_extend_without_speculative() and server_args.backend == "fa3":
            return AttnForwardMethod.MHA_PREFILL
        return AttnForwardMethod.MLA_CONCAT_ROPE


    class SarvamMLAForCausalLM(nn.Module):
        def forward(self, hidden_states, forward_batch):
            forward_method = get_attn_forward_method(self.server_args, forward_batch)
            if forward_method == AttnForwardMethod.MHA_PREFILL:
                return hidden_states[hidden_states > 1]  # not captured
            return hidden_states[hidden_states > 2]  # captured


    EntryClass = SarvamMLAForCausalLM
"""

FROZEN_KV_RUNNER = """
    import torch


    class FrozenKVMTPCudaGraphRunner:
        def __init__(self):
            self.graph = torch.cuda.CUDAGraph()
            self.worker = FrozenKVMTPDraftWorker()

        def capture_one_shape(self, forward_batch):
            self.worker.init_capture_metadata(forward_batch)
            with torch.cuda.graph(self.graph):
                return self.worker.draft_forward(forward_batch)


    class FrozenKVMTPDraftWorker:
        def init_capture_metadata(self, forward_batch):
            forward_batch.mark_forward_metadata_ready()

        def draft_forward(self, forward_batch):
            if forward_batch.needs_forward_metadata_init():
                forward_batch.seq_lens_sum = torch.sum(forward_batch.seq_lens).item()  # not captured
            hidden_states = forward_batch.hidden_states
            return hidden_states[hidden_states > 3]  # captured
"""


def test_the_sglang_preset_knows_the_attention_methods_and_the_marked_batch_of_a_capture(tmp_path: Path) -> None:
    # The preset's capture-call-results: neither DeepSeek's MHA / MHA_NPU nor Sarvam's
    # MHA_PREFILL is picked in a capture; its capture-false-calls: a batch the runner marked
    # ready is never planned again inside the capture.
    files = {
        **METHOD_FILES,
        "python/sglang/srt/models/sarvam_moe.py": SARVAM,
        "python/sglang/srt/speculative/frozen_kv_mtp_worker_v2.py": FROZEN_KV_RUNNER,
    }
    files = {name: textwrap.dedent(body) for name, body in files.items()}
    marked: dict[str, set[tuple[str, int]]] = {"captured": set(), "not captured": set()}
    for name, body in files.items():
        for number, line in enumerate(body.splitlines(), 1):
            for marker in marked:
                if line.rstrip().endswith(f"# {marker}") or f"# {marker}:" in line:
                    marked[marker].add((name, number))

    def found(pyproject: str) -> set[tuple[str, int]]:
        _, report = lint_project(tmp_path, files, pyproject=pyproject)
        return {(f["path"], f["line"]) for f in report["findings"]}

    assert marked["captured"] and marked["not captured"]
    assert found('[tool.graphlint]\npresets = ["sglang"]\n') == marked["captured"]
