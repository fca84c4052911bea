"""A method a capture picks, carried through the tuple a helper returns: sglang's DeepSeek
attention in its shape (``forward_prepare`` returns the method ``capture-call-results`` decides
in a tuple, ``forward`` hands the tuple to ``forward_core``, which unpacks it and tests the
method), written here."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.checks.conftest import lint_project

FORWARD_METHODS = """
    from enum import IntEnum, auto


    class AttnForwardMethod(IntEnum):
        MHA = auto()
        MLA = auto()
        MLA_NPU = auto()
"""

# Each host sync is ``x[x > N]`` (GL202); the comment says whether a capture runs it.
ATTENTION = """
    from torch import nn
    from sglang.srt.models.deepseek_common.attention_forward_methods import AttnForwardMethod


    class DeepseekV2AttentionMLA(nn.Module):
        def dispatch_attn_forward_method(self, forward_batch):
            if forward_batch.forward_mode.is_extend():
                return AttnForwardMethod.MHA
            return AttnForwardMethod.MLA_NPU

        def forward(self, hidden_states, forward_batch):
            s = self.forward_prepare(hidden_states, forward_batch)
            return self.forward_core(s)

        def forward_prepare(self, hidden_states, forward_batch):
            if hidden_states.shape[0] == 0:
                return hidden_states, None, forward_batch, None
            attn_forward_method = self.dispatch_attn_forward_method(forward_batch)
            return None, attn_forward_method, forward_batch, (hidden_states,)

        def forward_core(self, intermediate_state):
            hidden_states, attn_forward_method, forward_batch, inner_state = intermediate_state
            if inner_state is None:
                return hidden_states
            if attn_forward_method == AttnForwardMethod.MHA:
                return self.forward_mha_core(*inner_state)
            elif attn_forward_method != AttnForwardMethod.MLA_NPU:
                raise NotImplementedError
            return self.forward_mla_core_npu(*inner_state)

        def forward_mha_core(self, q):
            return q[q > 1]  # not captured

        def forward_mla_core_npu(self, q):
            return q[q > 2]  # captured


    class DeepseekV2ForCausalLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = DeepseekV2AttentionMLA()

        def forward(self, hidden_states, forward_batch):
            return self.attn(hidden_states, forward_batch)


    EntryClass = DeepseekV2ForCausalLM
"""

FILES = {
    "python/sglang/__init__.py": "",
    "python/sglang/srt/models/deepseek_common/attention_forward_methods/__init__.py": (
        "from .forward_methods import AttnForwardMethod\n"
    ),
    "python/sglang/srt/models/deepseek_common/attention_forward_methods/forward_methods.py": FORWARD_METHODS,
}

CAPTURE_RESULTS = """
    [tool.graphlint]
    presets = []
    capture-exports = {"sglang.srt.models.*" = ["EntryClass"]}

    [tool.graphlint.capture-call-results]
    "self.dispatch_attn_forward_method(...)" = [
        "sglang.srt.models.deepseek_common.attention_forward_methods.AttnForwardMethod.MLA_NPU",
    ]
"""


def _found(tmp_path: Path, attention: str, pyproject: str = CAPTURE_RESULTS) -> set[int]:
    tmp_path.mkdir(exist_ok=True)
    files = {name: textwrap.dedent(body) for name, body in FILES.items()}
    files["python/sglang/srt/models/deepseek_v2.py"] = textwrap.dedent(attention)
    _, report = lint_project(tmp_path, files, pyproject=textwrap.dedent(pyproject))
    assert all(f["code"] == "GL202" and f["path"].endswith("deepseek_v2.py") for f in report["findings"]), report["findings"]
    return {f["line"] for f in report["findings"]}


def _marked(text: str, marker: str) -> set[int]:
    return {n for n, line in enumerate(textwrap.dedent(text).splitlines(), 1) if line.endswith(f"# {marker}")}


def test_a_method_a_capture_picks_is_carried_through_the_returned_tuple(tmp_path: Path) -> None:
    # forward_prepare's element 1 is MLA_NPU (the dispatch call, through its name) or None: the
    # MHA core is never captured from forward's edge, the MLA_NPU one is; without the knowledge
    # both are.
    captured, not_captured = _marked(ATTENTION, "captured"), _marked(ATTENTION, "not captured")
    assert captured and not_captured
    assert _found(tmp_path / "known", ATTENTION) == captured
    plain = CAPTURE_RESULTS.split("[tool.graphlint.capture-call-results]")[0]
    assert _found(tmp_path / "plain", ATTENTION, plain) == captured | not_captured


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a return that is no tuple display: what forward_core unpacks from it is unknown
        ("return hidden_states, None, forward_batch, None", "return hidden_states[0]"),
        # another edge into forward_core hands it what no return says (a state entry)
        (
            "return self.forward_core(s)",
            "self.state['attn'] = s\n        return self.forward_core(self.state.pop('attn'))",
        ),
        # the name is bound twice: not only to the call
        (
            "return self.forward_core(s)",
            "if forward_batch.flag:\n            s = (None, AttnForwardMethod.MHA, forward_batch, (hidden_states,))\n"
            "        return self.forward_core(s)",
        ),
        # the unpacked name is bound again before the test
        (
            "if inner_state is None:",
            "attn_forward_method = forward_batch.method\n        if inner_state is None:",
        ),
        # an element that is not known (a parameter, not a decided call)
        ("return None, attn_forward_method,", "return None, forward_batch.method,"),
    ],
)
def test_what_the_tuple_does_not_say_keeps_the_call(tmp_path: Path, old: str, new: str) -> None:
    attention = textwrap.dedent(ATTENTION)
    assert old in attention
    changed = attention.replace(old, new)
    assert _found(tmp_path, changed) == _marked(changed, "captured") | _marked(changed, "not captured")


# forward_prepare as sglang writes it: hidden states handed as a tuple (quantized) return their
# first tensor when it has no rows, which is no tuple display.
EMPTY_BATCH = """
        if isinstance(hidden_states, tuple):
            if hidden_states[0].shape[0] == 0:
                return hidden_states[0]
        elif hidden_states.shape[0] == 0:
            return hidden_states, None, forward_batch, None
"""

FALSE_TESTS = """
    [tool.graphlint.capture-false-tests]
    "DeepseekV2AttentionMLA.forward_prepare" = ["hidden_states.shape[0]==0", "hidden_states[0].shape[0] == 0"]
"""


def test_a_return_under_a_test_no_capture_takes_is_not_read(tmp_path: Path) -> None:
    # capture-false-tests: the empty-batch tests are false in every capture (whitespace aside),
    # so `return hidden_states[0]` is no return a capture takes; without it the MHA core stays.
    attention = textwrap.dedent(ATTENTION)
    old = """
        if hidden_states.shape[0] == 0:
            return hidden_states, None, forward_batch, None
"""
    assert old in attention
    changed = attention.replace(old, EMPTY_BATCH)
    captured, not_captured = _marked(changed, "captured"), _marked(changed, "not captured")
    assert _found(tmp_path / "known", changed, CAPTURE_RESULTS + FALSE_TESTS) == captured
    assert _found(tmp_path / "plain", changed) == captured | not_captured
    other = FALSE_TESTS.replace("DeepseekV2AttentionMLA.forward_prepare", "Other.forward_prepare")
    assert _found(tmp_path / "other", changed, CAPTURE_RESULTS + other) == captured | not_captured
