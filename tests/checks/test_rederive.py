"""Assignments the full solve saw, changed or removed, re-derived in the kept solve
(``rederive.py``): the answer and the values of every named node are a fresh full solve's.

A seeded random walk changes the value of, removes or puts back assignments in the functions
of a small project in transformers' shape; after each edit the graph ``SolvedGraphs`` gives
(re-derived where it may, else extended or solved in full) is compared with a fresh full solve,
and so are the values of the kept solver's named nodes with a fresh solver's."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from graphlint.checks.incremental_solve import LiveSolve
from graphlint.checks.valueflow import Solver, solve, solve_kept

from .test_incremental_solve import BASE as INCREMENTAL
from .test_incremental_solve import canonical, linked, node_values, walked

BASE = {
    "app/__init__.py": "from .helpers import *\nfrom .layers import *\n",
    "app/helpers.py": INCREMENTAL["app/helpers.py"] + """

def pick(a, b):
    first = a
    second = b
    kept = first
    spare = second
    unused = count
    chosen = kept
    chosen = spare
    other = unused
    return chosen.view(-1)
""",
    "app/layers.py": """\
import torch
from torch import nn

from .helpers import count, pick, scale


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        h = self.proj(x)
        r = h
        s = r
        t = scale
        w = count
        last = s
        before = last
        out = pick(h, x)
        return out + before.sum()
""",
    "app/entry.py": """\
import torch

from app.layers import Block


def run(x):
    model = torch.compile(Block(4))
    result = model(x)
    spare = result
    again = spare
    return again
""",
}

# Per file, the names an assignment in its functions may be given (its scope's own and globals)
CHOICES = {
    "app/helpers.py": ["a", "b", "first", "second", "kept", "spare", "unused", "chosen", "count", "scale", "to_host", "torch"],
    "app/layers.py": ["x", "h", "r", "s", "t", "w", "last", "before", "self", "scale", "count", "pick", "Block"],
    "app/entry.py": ["x", "model", "result", "spare", "again", "run", "torch"],
}
ASSIGNMENT = re.compile(r"^(\s+)(\w+) = (\w+)$")


def edit(sources: dict[str, str], rng: random.Random) -> dict[str, str]:
    """One assignment of a function changed to another name, removed, or put back."""
    path = rng.choice(sorted(CHOICES))
    lines = sources[path].splitlines()
    base = BASE[path].splitlines()
    present = [i for i, line in enumerate(lines) if ASSIGNMENT.match(line)]
    removed = [i for i, line in enumerate(base) if ASSIGNMENT.match(line) and line not in lines]
    kind = rng.random()
    if removed and (kind < 0.15 or not present):  # put back a line removed before, above the next line still there
        at = rng.choice(removed)
        following = next(line for line in base[at + 1 :] if line in lines)
        lines.insert(lines.index(following), base[at])
    elif kind < 0.35:  # remove one
        del lines[rng.choice(present)]
    else:  # give one another value
        index = rng.choice(present)
        indent, name, _ = ASSIGNMENT.match(lines[index]).groups()  # type: ignore[union-attr]
        lines[index] = f"{indent}{name} = {rng.choice(CHOICES[path])}"
    return {**sources, path: "\n".join(lines) + "\n"}


def named_edges(solver: Solver) -> set[tuple[str, str]]:
    """The edges between the nodes named by what they stand for (``node_values``' tables)."""
    names = {
        node: repr((table, key))
        for table in ("variables", "results", "attributes", "constants", "decorated", "iterated")
        for key, node in getattr(solver, table).items()
    }
    return {(names[source], names[target]) for source in names for target in solver.successors[source] if target in names}


def file_tables(solver: Solver) -> Any:
    """What the solver keeps per file of the files' facts."""
    return [(solver.declared[f], solver.classes.assigned[f], solver.scoped(f)) for f in range(len(solver.files))]


@pytest.mark.parametrize(("seed", "outside_cap"), [*((seed, 16) for seed in range(10)), *((seed, 1) for seed in range(10, 16))])
def test_changed_assignments_are_re_derived_as_a_full_solve_answers(seed: int, outside_cap: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``outside_cap`` 1: the variables collapse the outside names they hold (``OUTSIDE_ANY``)."""
    monkeypatch.setattr("graphlint.checks.value_graph.OUTSIDE_CAP", outside_cap)
    rederived: list[bool] = []
    real = LiveSolve.extend

    def counted(self: LiveSolve, *args: Any) -> Any:
        answer = real(self, *args)
        rederived.append(self.rederived)
        return answer

    monkeypatch.setattr(LiveSolve, "extend", counted)
    for n, sources, files, got, graphs in walked(BASE, edit, seed):
        assert canonical(got) == canonical(solve(files)), (seed, n, sources)
        live = graphs._live
        assert live is not None and live.solver is not None
        fresh = solve_kept(list(live.solver.files), {}, {})
        assert node_values(live.solver) == node_values(fresh), (seed, n, sources)
        assert named_edges(live.solver) == named_edges(fresh), (seed, n, sources)
        assert file_tables(live.solver) == file_tables(fresh), (seed, n, sources)
        fresh.release()
    # the walk both re-derived and solved in full (else it checks only one path)
    assert any(rederived) and not all(rederived), rederived


HELPERS = """\
import torch


def first(x):
    return x


def second(x):
    return x


class A:
    def run(self):
        return first


class B:
    def run(self):
        return second


"""


@pytest.mark.parametrize(
    ("body", "old", "new", "why"),
    [
        # (each variable bound twice: a variable bound once is read as its value, ``local_bindings.py``)
        ("def f(x):\n    fn = first\n    if x:\n        fn = A\n    return fn(x)\n", "fn = first", "fn = second",
         "a variable the edit changes is read by a call, an attribute or a test"),
        ("def f(x):\n    fn = first\n    if x:\n        fn = A\n    torch.jit.script(fn)\n", "fn = first", "fn = second",
         "an outside call is handed a project function, class or instance"),
        ("class C:\n    def f(self, x):\n        fn = first\n        if x:\n            fn = A\n        self.fn = fn\n", "fn = first",
         "fn = second", "a variable the edit changes flows out of the function's variables"),
        ("def f(x):\n    x.w = first\n", "x.w = first", "x.w = second", "an assignment to an attribute changed"),
        ("FN = first\n", "FN = first", "FN = second", "a changed assignment binds a parameter, a class attribute or a module name"),
        ("def f(x, y):\n    x = first\n    return y\n", "x = first", "x = second", "a changed assignment binds a parameter"),
        ("def f(x):\n    fn = first\n    if x:\n        fn = A\n", "fn = first", "fn = x.real", "a changed assignment's value makes nodes"),
        ("def f(x, y):\n    fn = x\n    if x:\n        fn = A\n    return y\n", "fn = x", "fn = y", "a changed assignment's value is a node the solve lacks"),
        ("def f(x):\n    fn = first\n    fn(x)\n", "fn(x)", "fn(x, x)", "not only assignments changed"),
        ("def make(x):\n    Base = A\n    if x:\n        Base = A\n\n    class C(Base):\n        pass\n\n    return C().run()\n", "Base = A",
         "Base = B", "a class's bases read a changed variable"),
    ],
)
def test_an_edit_re_derivation_cannot_make_exact_is_refused_with_its_reason(body: str, old: str, new: str, why: str) -> None:
    sources = {"app/__init__.py": "", "app/m.py": HELPERS + body}
    live = LiveSolve(linked(sources), {}, {}, False)
    edited = linked({**sources, "app/m.py": sources["app/m.py"].replace(old, new)})
    answer = live.extend(edited, {}, {}, False)
    assert isinstance(answer, str) and f"not re-derived: {why}" in answer, answer


def test_a_variable_past_the_value_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("graphlint.checks.value_graph.VALUE_CAP", 2)
    sources = {"app/__init__.py": "", "app/m.py": HELPERS + "def f(x):\n    fn = first\n    fn = second\n    fn = second\n"}
    live = LiveSolve(linked(sources), {}, {}, False)
    edited = linked({**sources, "app/m.py": sources["app/m.py"].replace("fn = second\n", "fn = A\n", 1)})
    answer = live.extend(edited, {}, {}, False)
    assert isinstance(answer, str) and "not re-derived: a variable the edit changes would pass the value cap" in answer, answer


def copied_head(forward_body: str) -> dict[str, str]:
    """A project whose ``Head.forward`` (``forward_body``, indented) the solver copies per
    receiver class: it runs for a ``Child`` and for a ``Head``."""
    return {
        "app/__init__.py": "",
        "app/m.py": HELPERS + f"""\
class Head(torch.nn.Module):
    def forward(self, x):
{forward_body}

class Child(Head):
    pass


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.head = Child()
        self.plain = Head()

    def forward(self, x):
        return self.head(x) + self.plain(x)
""",
    }


def test_a_changed_assignment_in_a_method_with_copies_is_refused() -> None:
    sources = copied_head("        fn = first\n        return x\n")
    live = LiveSolve(linked(sources), {}, {}, False)
    assert live.solver is not None and any(copy.qualname == "Head.forward" for copy in live.solver.copies.values())
    edited = linked({**sources, "app/m.py": sources["app/m.py"].replace("fn = first", "fn = second")})
    answer = live.extend(edited, {}, {}, False)
    assert isinstance(answer, str) and "not re-derived: a changed assignment is in a function that has copies" in answer, answer


def test_a_file_the_solver_numbers_otherwise_is_not_re_derived() -> None:
    """A call inserted above others is numbered after them in the solver (``renumber.py``): the
    edited facts are not the solver's, and the edit solves in full."""
    body = "def f(x):\n    fn = first\n    if x:\n        fn = A\n    return torch.relu(x)\n"
    sources = {"app/__init__.py": "", "app/m.py": HELPERS + body}
    live = LiveSolve(linked(sources), {}, {}, False)
    inserted = HELPERS.replace("class A:", "Z = torch.ones(1)\n\n\nclass A:") + body
    assert not isinstance(live.extend(linked({**sources, "app/m.py": inserted}), {}, {}, False), str)
    appended = inserted + "W = torch.zeros(1)\n"
    assert not isinstance(live.extend(linked({**sources, "app/m.py": appended}), {}, {}, False), str)
    assert live.numbered
    answer = live.extend(linked({**sources, "app/m.py": appended.replace("fn = first", "fn = second")}), {}, {}, False)
    assert isinstance(answer, str) and "not re-derived: the solver numbers the file's calls otherwise" in answer, answer
