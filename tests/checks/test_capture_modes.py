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
                return hidden_states[hidden_states > 5]  # captured: DLLM_EXTEND
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
    # is true in every capture mode but DLLM_EXTEND, which the `elif` then takes (no logprobs
    # asked), so the `else` (input logprobs) is never captured; nor what follows
    # `if not extend_return_logprob: return`, nor the multi-item-scoring branch (`... and
    # is_prefill_only`), nor the context-parallel prefill (`can_cp_split(...)`, then
    # `attn_cp_metadata is not None`). The compiled prefill helper still takes its branch.
    found = _findings(tmp_path, '[tool.graphlint]\npresets = ["sglang"]\n')
    assert found == _lines("captured") | _lines("compiled")
    assert _lines("captured") and _lines("not captured")
    # without that knowledge (the preset's capture-exports alone) every branch is captured
    plain = _findings(tmp_path, '[tool.graphlint]\ncapture-exports = {"sglang.srt.models.*" = ["EntryClass"]}\n')
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
    ],
)
def test_a_malformed_capture_key_is_a_usage_error(tmp_path: Path, setting: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.graphlint]\n{setting}\n")
    (tmp_path / "app.py").write_text("x = 1\n")
    with chdir(tmp_path):
        assert run_cli("check", "--no-cache", ".")[0] == 2
