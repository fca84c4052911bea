"""`graphlint callgraph`: the same edges in the same order whatever the interpreter's hash seed.

A call site's targets are a set, iterated in the order of string hashes, which Python varies per
process (``PYTHONHASHSEED``); the printed graph is diffed by users between runs, so it is sorted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

DISPATCH = textwrap.dedent(
    """
    def alpha(): pass
    def beta(): pass
    def gamma(): pass
    def delta(): pass
    def epsilon(): pass
    HANDLERS = {"a": alpha, "b": beta, "c": gamma, "d": delta, "e": epsilon}
    def run(key):
        HANDLERS[key]()
    """
)


def _callgraph(root: Path, seed: int, fmt: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    done = subprocess.run(
        [sys.executable, "-m", "graphlint", "callgraph", "--no-cache", "--format", fmt, "app.py"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, check=True,
    )
    return done.stdout


def test_edges_print_in_one_order_under_every_hash_seed(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(DISPATCH)
    # five targets: three seeds print them alike by chance once in 120² without the sort
    runs = {fmt: {_callgraph(tmp_path, seed, fmt) for seed in (1, 2, 3)} for fmt in ("json", "dot")}
    assert len(runs["json"]) == 1 and len(runs["dot"]) == 1
    edges = json.loads(runs["json"].pop())["edges"]
    assert [edge["callee"] for edge in edges] == ["app.alpha", "app.beta", "app.delta", "app.epsilon", "app.gamma"]
    assert {(edge["caller"], edge["line"], edge["kind"]) for edge in edges} == {("app.run", 9, "call")}
