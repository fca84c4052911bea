"""The value-flow solve has one answer whatever order the values arrive in, also where it collapses
outside names (``value_graph.OUTSIDE_ANY``): the order hangs on Python's string hashing, so solves
under several ``PYTHONHASHSEED``s, each in a process of its own, must give the same graph."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from graphlint.checks.value_graph import OUTSIDE_ANY, OUTSIDE_CAP
from graphlint.checks.valueflow import solve
from tests.checks.test_incremental_solve import linked

ROOT = Path(__file__).resolve().parents[2]

# ``B`` takes ten outside names at once, then ``A.sub`` of ten more one by one, in the order the
# watcher of ``A.sub`` iterates ``A``'s names (their hashes): a bound that kept the first 16 kept
# a different six of them under each seed (five answers in six seeds before the collapse was
# absorbing). ``app/z.py`` comes after ``app/names.py``: ``A`` gets its names once the edges exist.
ORDERED = {
    "app/__init__.py": "",
    "app/names.py": "import m\nfrom app.z import A\n\nB = " + " or ".join(f"m.b{i}" for i in range(10))
    + " or A.sub\n\n\ndef run(x):\n    return B(x)\n",
    "app/z.py": "import m\n\nA = " + " or ".join(f"m.a{i}" for i in range(10)) + "\n",
}

_SOLVE = """
import json, sys
from graphlint.checks.valueflow import solve
from tests.checks.test_incremental_solve import canonical, linked
graph = solve(linked(json.loads(sys.stdin.read())))
print(json.dumps(canonical(graph), sort_keys=True))
"""


def _solved_under(seed: int, sources: dict[str, str]) -> str:
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", _SOLVE], input=json.dumps(sources), env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def test_a_solve_that_collapses_outside_names_has_one_answer_under_every_hash_seed() -> None:
    answers = {seed: _solved_under(seed, ORDERED) for seed in range(5)}
    assert len(set(answers.values())) == 1, answers
    assert json.loads(answers[0])["collapsed"] > 0  # the project does pass the bound
    graph = solve(linked(ORDERED))
    # ``B(x)`` (file 1, its only call): some outside names, which ones not kept
    assert graph.callees == {(1, 0): {"*": "call"}}


def test_outside_names_under_the_bound_are_kept_by_name() -> None:
    sources = {**ORDERED, "app/names.py": ORDERED["app/names.py"].replace(" or A.sub", "")}
    graph = solve(linked(sources))
    assert graph.collapsed == 0
    assert set(graph.callees[1, 0]) == {f"m.b{i}" for i in range(10)}


def test_a_name_the_solver_follows_is_never_collapsed() -> None:
    """``functools.partial`` after more than OUTSIDE_CAP other outside names is still a partial:
    calling what it made runs ``helper`` (a bound that kept the first names dropped it)."""
    union = " or ".join(f"m.b{i}" for i in range(OUTSIDE_CAP + 1))
    names = (
        "import functools\nimport m\n\n\ndef helper(x):\n    return x\n\n\n"
        f"F = {union} or functools.partial\nG = F(helper, 1)\n\n\ndef run():\n    return G()\n"
    )
    files = linked({"app/__init__.py": "", "app/names.py": names})
    graph = solve(files)
    assert graph.collapsed > 0
    run_site = max(ordinal for file, ordinal in graph.callees if file == 1)  # ``G()``, the last call
    assert {t.qualname for t in graph.callees[1, run_site] if not isinstance(t, str)} == {"helper"}
    assert OUTSIDE_ANY[1] in graph.callees[1, run_site - 1]  # ``F(helper, 1)`` runs some outside names too
