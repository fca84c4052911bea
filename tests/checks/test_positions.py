"""Node positions from the ast twin agree with libcst's own PositionProvider, on real code."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import libcst as cst
import pytest

from graphlint.checks.positions import ANCHOR_KINDS, _locate_with_libcst, locate
from graphlint.checks.syntax import preorder

TORCH = Path(importlib.util.find_spec("torch").origin).parent  # read, never imported
REAL_FILES = [TORCH / "_dynamo" / "eval_frame.py", TORCH / "_tensor.py"]
ODD_SYNTAX = '''\
import torch

@torch.compile(mode="reduce-overhead")  # decorators come before their def
def f(x, *, k=torch.ones(2)(3), **kw) -> torch.Tensor(1):
    s = f"{x.size(0)!r:>{x.dim()}}" f"{(lambda: x.sum())()}"
    y = (a(b)(c) if g(x)[0] else h(x)[1:2]) + [i(j) for j in k(l)]
    if (g(x) > 1):  # an if is located at its test, an elif too
        pass
    elif not h(x):
        pass
    match x.item():
        case 1 if ok(x):
            return z(x)
    return "é" + str(x.numel()) + nested(f(g(h(x))))
\x0c
def crlf():\r\n    return "\u00e9\u00e9", call(1)\r\n
'''


def _all_anchors(module: cst.Module) -> tuple[dict[str, int], list[tuple[str, int, cst.CSTNode]]]:
    counts = {kind: 0 for kind in ANCHOR_KINDS.values()}
    anchors = []
    for node in preorder(module):
        kind = ANCHOR_KINDS.get(type(node))
        if kind:
            anchors.append((kind, counts[kind], node))
            counts[kind] += 1
    return counts, anchors


@pytest.mark.parametrize("source", [*REAL_FILES, ODD_SYNTAX], ids=["eval_frame", "tensor", "odd-syntax"])
def test_ast_twins_match_position_provider(source: Path | str) -> None:
    text = source.read_text(encoding="utf-8") if isinstance(source, Path) else source
    module = cst.parse_module(text)
    counts, anchors = _all_anchors(module)
    assert len(anchors) > 10
    assert locate(text, module, counts, anchors) == _locate_with_libcst(module, anchors)


def test_syntax_newer_than_this_python_falls_back_to_libcst() -> None:
    text = "type Vector = list[float]\nx = f(g(1))\n"  # Python 3.12 syntax: ast on 3.11 fails
    module = cst.parse_module(text)
    counts, anchors = _all_anchors(module)
    spans = locate(text, module, counts, anchors)
    assert [(s.line, s.column, s.end_column) for s in spans.values()] == [(1, 15, 26), (2, 1, 2), (2, 5, 12), (2, 7, 11)]
