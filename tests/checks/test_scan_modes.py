"""What a block surely raises in, asked of every capture mode at once (``raising_blocks.py``):
one scan while the modes answer alike, one per mode where they part, and none per mode in a file
that writes no name of the per-mode tables (``capture_values.modes_may_differ``). Either way the
facts are those of a scan per mode. The shapes are sglang's (its preset's five capture modes): a
layer that branches on the forward mode and reads a field None in some modes only. Written here
in sglang's module layout, no code copied."""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Iterator

import libcst as cst
import pytest

from graphlint.checks import extract
from graphlint.checks.capture_values import modes_may_differ
from graphlint.checks.engine import extract_options_of
from graphlint.checks.extract import extract_facts
from graphlint.checks.facts import ExtractOptions
from graphlint.checks.presets import knowledge
from graphlint.checks.raising_blocks import RaisingBlocks, _ModesDiffer
from graphlint.config import Config
from tests.checks.test_mode_attributes import CAUGHT, LAYER, LENGTHS_ONLY, PER_REQUEST, VERIFY
from tests.checks.test_raising_blocks import GUARDED, MODEL

BODIES = (PER_REQUEST, LENGTHS_ONLY, CAUGHT)
SGLANG = extract_options_of(knowledge(Config(presets=("sglang",)), ["sglang"]))

# No name of the per-mode tables: every mode answers every fact alike. No capture batch has
# multimodal inputs (None), so ``forward`` raises in every capture; ``plain`` only tests them.
PLAIN = """
import torch
from torch import nn


class Mixer(nn.Module):
    def forward(self, x, forward_batch):
        lens = forward_batch.extend_prefix_lens
        if lens is not None and lens[0] > 0:
            raise ValueError("no prefix in a capture")
        if forward_batch.mm_inputs[0] is None:
            x = x + 1
        return x * torch.ones(4)

    def plain(self, x, forward_batch):
        if forward_batch.mm_inputs is None:
            x = x + 1
        return x * torch.ones(4)
"""

# The forward mode decides a branch, and the lengths are None in TARGET_VERIFY and DLLM_EXTEND
# only (a list in DRAFT_EXTEND_V2): the modes part.
PARTED = """
import torch
from torch import nn


class Verify(nn.Module):
    def _extend(self, x, forward_batch):
        host = forward_batch.req_pool_indices.tolist()
        for i, n in enumerate(forward_batch.extend_seq_lens_cpu):
            x = x + host[i] * n
        return x

    def forward(self, x, forward_batch):
        decode = forward_batch.forward_mode.is_decode_or_idle()
        if decode:
            return x * 2
        lens = forward_batch.extend_seq_lens_cpu
        total = sum(lens) if lens else 0
        if forward_batch.forward_mode.is_target_verify():
            y = lens[0]
        else:
            y = 1
        return self._extend(x, forward_batch) + total + y
"""


def _scanned_modes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many modes each scan of a block's statements is asked in, recorded."""
    sizes: list[int] = []
    suite_raising = RaisingBlocks._suite_raising

    def counted(self: RaisingBlocks, suite: cst.BaseSuite, modes: frozenset[str]) -> frozenset[str]:
        sizes.append(len(modes))
        return suite_raising(self, suite, modes)

    monkeypatch.setattr(RaisingBlocks, "_suite_raising", counted)
    return sizes


def test_a_block_every_mode_answers_alike_is_scanned_once_for_all(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = _scanned_modes(monkeypatch)
    facts = extract_facts(PLAIN.encode(), SGLANG)
    assert sizes and set(sizes) <= {0, 5}, sizes  # never one mode at a time
    # ``forward`` raises in every capture (its factory is never captured), ``plain`` in none.
    assert [(c.scope, c.uncaptured) for c in facts.candidates] == [("Mixer.forward", True), ("Mixer.plain", False)]


def test_modes_that_part_are_scanned_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = _scanned_modes(monkeypatch)
    facts = extract_facts(PARTED.encode(), SGLANG)
    assert 1 in sizes and 5 in sizes, sizes  # tried together, then mode by mode
    # The loop over the lengths raises where they are None: the host sync before it is captured
    # in the other modes only.
    assert [(c.scope, c.modes) for c in facts.candidates] == [("Verify._extend", ["DECODE", "DRAFT_EXTEND_V2", "IDLE"])]


@pytest.fixture
def one_mode_at_a_time(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every scan of several modes given up at its first fact: each mode scanned alone, as the
    scans were before they were shared."""

    def differ(self: RaisingBlocks, fact: object, expr: cst.BaseExpression, modes: frozenset[str]) -> frozenset[str]:
        raise _ModesDiffer

    def asked(self: RaisingBlocks, fact, expr, modes):  # type: ignore[no-untyped-def]
        return differ(self, fact, expr, modes) if self.alike_modes is not None and modes else fact(expr, modes)

    monkeypatch.setattr(RaisingBlocks, "_per_mode", asked)
    yield


def _sources() -> list[tuple[str, bytes]]:
    """These layers, and those of the tests of the per-mode tables and of raising blocks."""
    layers = {f"layer {n}": LAYER.format(body=textwrap.indent(body.strip("\n"), " " * 12)) for n, body in enumerate(BODIES)}
    texts = {"plain": PLAIN, "parted": PARTED, "verify": VERIFY, "short conv": MODEL, "guarded": GUARDED, **layers}
    return [(name, textwrap.dedent(text).encode()) for name, text in texts.items()]


@pytest.mark.parametrize("options", [SGLANG, dataclasses.replace(SGLANG, capture_modes=("DECODE", "IDLE"))])
def test_the_shared_scans_give_the_facts_of_one_scan_per_mode(
    options: ExtractOptions, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """The facts, as cached, of a scan of all modes at once (where they answer alike, and in a
    file asked mode by mode because it may differ) and of a scan per mode are the same text."""
    shared = {name: extract_facts(source, options).to_text() for name, source in _sources()}
    monkeypatch.setattr(extract, "modes_may_differ", lambda options, text: True)
    asked_each = {name: extract_facts(source, options).to_text() for name, source in _sources()}
    request.getfixturevalue("one_mode_at_a_time")
    alone = {name: extract_facts(source, options).to_text() for name, source in _sources()}
    assert shared == alone
    assert asked_each == alone


def test_a_file_may_differ_between_modes_only_where_it_writes_a_per_mode_name() -> None:
    assert not modes_may_differ(SGLANG, PLAIN)
    assert modes_may_differ(SGLANG, PARTED)
    assert modes_may_differ(SGLANG, "n = len(batch.extend_seq_lens_cpu)")  # a per-mode attribute
    assert not modes_may_differ(dataclasses.replace(SGLANG, capture_modes=("DECODE",)), PARTED)  # one mode
    # A table entry whose last part is a pattern may match any name.
    patterned = dataclasses.replace(SGLANG, capture_mode_calls=(("forward_mode.is_*", ("DECODE",)),))
    assert modes_may_differ(patterned, PLAIN)
