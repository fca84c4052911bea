"""A buffer edited many times, walked with the answers kept from its earlier texts
(``kept_answers.py``, ``reparse.StatementParser``), has the facts a fresh walk of each text has:
a seeded random walk of edits (lines inserted, deleted and changed in functions, classes and at
module level) over a real transformers modeling file and sglang-shaped modules whose blocks
raise in some capture modes, read names bound only on other platforms or loop over what is
empty, facts compared as the
cache writes them."""

from __future__ import annotations

import ast
import random
import textwrap
from pathlib import Path

import pytest

from graphlint.checks import kept_answers
from graphlint.checks.engine import extract_options_of
from graphlint.checks.extract import extract_facts
from graphlint.checks.facts import ExtractOptions
from graphlint.checks.presets import knowledge
from graphlint.checks.reparse import StatementParser
from graphlint.config import Config
from tests.checks.test_capture_empty import MODEL as EMPTY
from tests.checks.test_raising_blocks import GUARDED, MODEL
from tests.checks.test_reparse import transformers_files
from tests.checks.test_unbound_names import ALIGN

SGLANG = extract_options_of(knowledge(Config(presets=("sglang",)), ["sglang"]))

# Lines an edit puts in a body: ways to leave a block, operands None cannot be, calls, names
# bound (builtins' too); the same lines again are edits too (a statement met twice in one text).
BODY_LINES = (
    "return None",
    "return x",
    "raise ValueError('edited')",
    "if forward_batch.extend_prefix_lens[:1] > 0: return x",
    "if x is None: raise ValueError('none')",
    "x = forward_batch.extend_prefix_lens[0]",
    "y = x.item()",
    "x = torch.zeros(1).cpu()",
    "for _ in range(2): break",
    "while x: continue",
    "yield x",
    "_unbound_name = missing_global(x)",
    "global EDITED",
    "len = max",
    "zip = map",
)
MODULE_LINES = (
    "EDITED = 1",
    "kernel_align_block_size = None",
    "if _is_cuda:\n    from kernels import missing_global\n",
    "import math",
    "def zip(*args):\n    return args\n",
    "if False:\n    from kernels import missing_global\n",
    "def helper(x):\n    return x.item()\n",
    "class Edited(nn.Module):\n    def forward(self, x):\n        return x[0]\n",
)


def edit(text: str, chosen: random.Random) -> str:
    """``text`` with one line inserted, deleted or changed at a random place; a text that no
    longer parses is left for another edit."""
    lines = text.splitlines(keepends=True)
    for _ in range(50):
        index = chosen.randrange(len(lines))
        line = lines[index]
        indent = line[: len(line) - len(line.lstrip())] if line.strip() else ""
        kind = chosen.choice(("insert", "insert", "delete", "change", "module", "copy"))
        if kind == "insert":
            new = [*lines[:index], f"{indent}{chosen.choice(BODY_LINES)}\n", *lines[index:]]
        elif kind == "delete":
            new = [*lines[:index], *lines[index + 1 :]]
        elif kind == "change":
            new = [*lines[:index], f"{indent}{chosen.choice(BODY_LINES)}\n", *lines[index + 1 :]]
        elif kind == "module":
            new = [*lines[:index], "\n", chosen.choice(MODULE_LINES), "\n", *lines[index:]]
        else:  # a top-level statement written again after itself
            starts = [node.lineno - 1 for node in ast.parse(text).body if not getattr(node, "decorator_list", None)]
            start = chosen.choice(starts)
            end = next((s for s in starts if s > start), len(lines))
            new = [*lines[:end], *lines[start:end], *lines[end:]]
        candidate = "".join(new)
        try:
            ast.parse(candidate)
        except SyntaxError:
            continue
        return candidate
    raise AssertionError("no edit parses")


def walk(text: str, options: ExtractOptions, edits: int, seed: str) -> None:
    parser = StatementParser()
    chosen = random.Random(seed)
    for step in range(edits + 1):
        source = text.encode("utf-8")
        kept = extract_facts(source, options, parse=parser).to_text()
        assert kept == extract_facts(source, options).to_text(), f"edit {step} of {seed}:\n{text}"
        text = edit(text, chosen)


@pytest.mark.parametrize("shape", ["model", "guarded", "align", "empty"])
def test_sglang_shapes_edited_many_times(shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kept_answers, "MODULES_KEPT", 8)  # answers dropped often: ids of dead nodes come back
    source = textwrap.dedent({"model": MODEL, "guarded": GUARDED, "align": ALIGN, "empty": EMPTY}[shape])
    walk(source, SGLANG, 60, shape)


@pytest.mark.parametrize("path", transformers_files(2)[:1], ids=lambda p: p.name)
def test_a_transformers_file_edited_many_times(path: Path) -> None:
    walk(path.read_text(encoding="utf-8"), ExtractOptions(), 12, path.name)


def test_a_statement_written_twice_is_two_statements() -> None:
    """Two equal top-level statements are two pieces of one text: each its own nodes (one node
    in both places would be one call of the two)."""
    text = "import torch\n\n@torch.compile\ndef f(x):\n    return x\n\n" + "y = f(torch.ones(1)).item()\n" * 2
    parser = StatementParser()
    module = parser(text, ast.parse(text))
    assert module.body[-1] is not module.body[-2] and module.body[-1].body[0] is not module.body[-2].body[0]
    assert extract_facts(text.encode(), parse=parser).to_text() == extract_facts(text.encode()).to_text()


def test_a_builtin_bound_in_an_edit_is_no_longer_the_builtin() -> None:
    """``zip = map`` typed into another function of the file: the loop over ``zip(...)`` of
    what a capture batch lacks is no longer known to run nothing, in the next walk as in a fresh
    one (the names a statement binds are kept by its whole text, not by its first line)."""
    text = textwrap.dedent(EMPTY)
    edited = text.replace("    into.append(len(inputs))", "    zip = map\n    into.append(len(inputs))")
    parser = StatementParser()
    for source in (text.encode(), edited.encode()):
        assert extract_facts(source, SGLANG, parse=parser).to_text() == extract_facts(source, SGLANG).to_text()
    assert extract_facts(edited.encode(), SGLANG).to_text() != extract_facts(text.encode(), SGLANG).to_text()
