"""Changed arguments of calls the full solve saw, taken back in the kept solve
(``call_retraction.py``, through ``rederive.py``): the answer, the values of every named node,
the edges between them, the per-file tables and what each call is handed are a fresh full
solve's.

A seeded random walk gives the arguments of calls in a small project in transformers' shape
other names of their scope (the assigned name itself too: ``x = f(x)``, a rebound argument),
changes what locals are assigned, or puts a line back; after each edit the graph
``SolvedGraphs`` gives (re-derived where it may, else solved in full) is compared with a fresh
full solve."""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from graphlint.checks.incremental_solve import LiveSolve
from graphlint.checks.valueflow import Solver, solve, solve_kept

from .test_incremental_solve import canonical, linked, node_values, walked
from .test_rederive import BASE as REDERIVE
from .test_rederive import HELPERS, copied_head, file_tables, named_edges

OPS = """\
import torch

from .helpers import count, pick, scale


def mix(x, y):
    h = torch.relu(y)
    # read nowhere and its value compiles to nothing: the solve makes no node for it
    q = torch.relu(x) / 2
    z = torch.cat(h, x)
    w = z
    if y:
        w = h
    v = torch.stack(w, y)
    m = scale(w, v)
    u = torch.sum(m, dim=h, out=x or y)
    n = scale(u)
    return torch.add(n, x)


class Mixer(torch.nn.Module):
    def forward(self, x):
        a = torch.relu(x)
        b = torch.matmul(a, x, out=self.out)
        c = b
        if a:
            c = a
        d = self.project(c, a)
        return torch.mul(d, b)

    def project(self, p, q):
        r = torch.mul(p, q)
        return r


class SubMixer(Mixer):
    pass


# Mixer's methods run for a Mixer and a SubMixer: copied per receiver class (receiver_copies.py)
MIXED = [Mixer()(torch.ones(1)), SubMixer()(torch.ones(2))]
"""

BASE = {**REDERIVE, "app/ops.py": OPS, "app/__init__.py": REDERIVE["app/__init__.py"] + "from .ops import *\n"}
# Per function of ops.py (by the first line of its body), the names an argument or value may be
SCOPES = {
    "mix": ["x", "y", "h", "q", "z", "w", "v", "m", "u", "n", "scale", "count", "pick", "torch", "mix", "Mixer"],
    "forward": ["self", "x", "a", "b", "c", "d", "scale", "Mixer", "torch"],
    "project": ["self", "p", "q", "r", "scale", "torch"],
}
CALL = re.compile(r"^(\s+)(?:(\w+) = |return )([\w.]+)\((.*)\)$")
ASSIGNMENT = re.compile(r"^(\s+)(\w+) = (\w+)$")


def scope_of(lines: list[str], index: int) -> str:
    return next(re.match(r"\s*def (\w+)", line)[1] for line in reversed(lines[:index]) if re.match(r"\s*def ", line))  # type: ignore[index]


def edit(sources: dict[str, str], rng: random.Random) -> dict[str, str]:
    """One call's argument given another name of its scope, one local's value changed, or a line
    of ops.py put back as it was."""
    lines = sources["app/ops.py"].splitlines()
    base = OPS.splitlines()
    kind = rng.random()
    changed = [i for i, line in enumerate(lines) if line != base[i]]
    if changed and kind < 0.15:
        index = rng.choice(changed)
        lines[index] = base[index]
    elif kind < 0.35:
        index = rng.choice([i for i, line in enumerate(lines) if ASSIGNMENT.match(line)])
        indent, name, _ = ASSIGNMENT.match(lines[index]).groups()  # type: ignore[union-attr]
        lines[index] = f"{indent}{name} = {rng.choice(SCOPES[scope_of(lines, index)])}"
    else:
        index = rng.choice([i for i, line in enumerate(lines) if CALL.match(line)])
        found = CALL.match(lines[index])
        assert found is not None
        arguments = found[4].split(", ")
        at = rng.randrange(len(arguments))
        keyword, _, _ = arguments[at].rpartition("=")
        name = rng.choice(SCOPES[scope_of(lines, index)])
        arguments[at] = f"{keyword}={name}" if keyword else name
        lines[index] = f"{found[1]}{f'{found[2]} = ' if found[2] else 'return '}{found[3]}({', '.join(arguments)})"
    return {**sources, "app/ops.py": "\n".join(lines) + "\n"}


def named_watchers(solver: Solver) -> dict[str, int]:
    """How many watchers each named node has (a rebound argument's node watches what it reads;
    nodes without one left out, as a solve may make a node another never asks for)."""
    return {
        repr((table, key)): len(solver.watchers[node])
        for table in ("variables", "results", "attributes", "constants", "decorated", "iterated")
        for key, node in getattr(solver, table).items()
        if solver.watchers[node]
    }


def named_nodes(solver: Solver) -> dict[int, str]:
    """The nodes named by what they stand for (``node_values``' tables)."""
    return {
        node: repr((table, key))
        for table in ("variables", "results", "attributes", "constants", "decorated", "iterated")
        for key, node in getattr(solver, table).items()
    }


def edge_makers(solver: Solver) -> dict[tuple[str, str], int]:
    """How many times more than once each edge between named nodes was made."""
    names = named_nodes(solver)
    return {
        (names[s], names[t]): n for (s, t), n in solver.repeated_edges.items() if s in names and t in names and t in solver.successors[s]
    }


def site_arguments(solver: Solver) -> dict[str, Any]:
    """What each call is handed: its argument nodes named by what they stand for, or by their
    values where no table names them (a rebound argument's node of its own)."""
    names = {
        node: repr((table, key))
        for table in ("variables", "results", "attributes", "constants", "decorated", "iterated")
        for key, node in getattr(solver, table).items()
    }

    def named(node: int | None) -> Any:
        return None if node is None else names.get(node, sorted(map(repr, solver.values[node])))

    return {
        repr(key): ([named(n) for n in args.positional], [(k, named(n)) for k, n in args.keywords])
        for key, args in solver.site_args.items()
    }


@pytest.mark.parametrize(("seed", "outside_cap"), [*((seed, 16) for seed in range(8)), *((seed, 1) for seed in range(8, 12))])
def test_changed_call_arguments_are_taken_back_as_a_full_solve_answers(seed: int, outside_cap: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``outside_cap`` 1: what the calls are handed collapses the outside names (``OUTSIDE_ANY``)."""
    monkeypatch.setattr("graphlint.checks.value_graph.OUTSIDE_CAP", outside_cap)
    taken: list[bool] = []
    real = LiveSolve.extend

    def counted(self: LiveSolve, *args: Any) -> Any:
        answer = real(self, *args)
        taken.append(self.rederived)
        return answer

    monkeypatch.setattr(LiveSolve, "extend", counted)
    for n, sources, files, got, graphs in walked(BASE, edit, seed):
        assert canonical(got) == canonical(solve(files)), (seed, n, sources["app/ops.py"])
        live = graphs._live
        assert live is not None and live.solver is not None
        fresh = solve_kept(list(live.solver.files), {}, {})
        assert node_values(live.solver) == node_values(fresh), (seed, n, sources["app/ops.py"])
        assert named_edges(live.solver) == named_edges(fresh), (seed, n, sources["app/ops.py"])
        assert edge_makers(live.solver) == edge_makers(fresh), (seed, n, sources["app/ops.py"])
        assert file_tables(live.solver) == file_tables(fresh), (seed, n, sources["app/ops.py"])
        assert site_arguments(live.solver) == site_arguments(fresh), (seed, n, sources["app/ops.py"])
        assert named_watchers(live.solver) == named_watchers(fresh), (seed, n, sources["app/ops.py"])
        fresh.release()
    # the walk both took calls back and solved in full (else it checks only one path)
    assert any(taken) and not all(taken), taken


CALLS = """\
def f(x, y):
    h = torch.relu(y)
    z = torch.cat(h, x)
    return torch.stack(z, first(h))
"""


@pytest.mark.parametrize(
    ("body", "old", "new", "why"),
    [
        (CALLS + "\n\ndef g(x):\n    torch.relu(x)\n    torch.tanh(x)\n", "    torch.tanh(x)\n", "", "calls added or removed"),
        (CALLS, "torch.cat(h, x)", "torch.mul(h, x)", "a call's callee, scope or form changed"),
        (CALLS, "torch.cat(h, x)", "torch.cat(h, x, y)", "a call's callee, scope or form changed"),
        (CALLS.replace("torch.cat(h, x)", "torch.cat(h, *x)"), "torch.cat(h, *x)", "torch.cat(y, *x)",
         "a changed call hands on *xs or **kw"),
        ("def f(x, y):\n    h = x\n    if y:\n        h = torch.relu(y)\n    return first(h)\n", "h = x", "h = y",
         "a variable the edit changes is read by a call, an attribute or a test"),
        ("def f(model, x):\n    compiled = torch.compile(model)\n    return compiled(x)\n", "torch.compile(model)",
         "torch.compile(x)", "a changed call is an entry point's"),
        (CALLS, "torch.cat(h, x)", "torch.cat(h, x.real)", "a changed call's argument is not a variable or a call's result"),
        (CALLS, "torch.cat(h, x)", "torch.cat(h, x or y)", "a changed call's argument is not a variable or a call's result"),
        (CALLS, "first(h)", "first(x)", "the changed call takes values from a parameter"),
        # (a parameter nothing reads or binds: a call's binding or the defaults may give it values)
        (CALLS.replace("def f(x, y):", "def f(x, y, spare):"), "torch.cat(h, x)", "torch.cat(h, spare)",
         "a changed call's argument is a node the solve lacks"),
        (CALLS, "torch.cat(h, x)", "torch.cat(h, A)", "an outside call is handed a project function, class or instance"),
        (CALLS, "torch.cat(h, x)", "torch.cat(h, first)", "an outside call is handed a project function, class or instance"),
    ],
)
def test_a_changed_call_the_take_back_cannot_make_exact_is_refused_with_its_reason(body: str, old: str, new: str, why: str) -> None:
    sources = {"app/__init__.py": "", "app/m.py": HELPERS + body}
    live = LiveSolve(linked(sources), {}, {}, False)
    text = sources["app/m.py"]
    edited = text[: len(HELPERS)] + (re.sub(rf"\b{old}\b", new, body) if old == "h" else body.replace(old, new))
    assert edited != text
    answer = live.extend(linked({**sources, "app/m.py": edited}), {}, {}, False)
    assert isinstance(answer, str) and "not re-derived: " in answer and why in answer, answer


def taken_back_edits(live: LiveSolve, sources: dict[str, str], old: str, calls: Iterable[str]) -> Iterator[tuple[str, Solver]]:
    """Each of ``calls`` in place of ``old`` in ``app/m.py``, in turn: taken back by the kept
    solve with a full solve's answer, call arguments and watchers. Yields the call and the fresh
    full solve's solver (released after) for what a test compares besides."""
    for call in calls:
        edited = linked({**sources, "app/m.py": sources["app/m.py"].replace(old, call)})
        answer = live.extend(edited, {}, {}, False)
        assert not isinstance(answer, str) and live.rederived, (call, answer)
        assert canonical(answer) == canonical(solve(edited)), call
        assert live.solver is not None
        fresh = solve_kept(edited, {}, {})
        assert site_arguments(live.solver) == site_arguments(fresh), call
        assert named_watchers(live.solver) == named_watchers(fresh), call
        yield call, fresh
        fresh.release()


def test_a_variable_of_the_function_the_solve_never_made_is_made_empty_as_a_full_solve_makes_it() -> None:
    """``k`` is assigned a value that compiles to nothing and read nowhere: the kept solve has no
    node for it. A call handed ``k`` and a local given ``k``, and both back: its node made,
    empty, with the edges a full solve gives it."""
    body = (
        "def f(x, y):\n    h = torch.relu(y)\n    k = torch.relu(y) / 2\n    w = h\n    if x:\n        w = x\n"
        "    z = torch.cat(h, x)\n    return torch.stack(z, first(h), w)\n"
    )
    sources = {"app/__init__.py": "", "app/m.py": HELPERS + body}
    live = LiveSolve(linked(sources), {}, {}, False)
    assert live.solver is not None and (1, "f.k") not in live.solver.variables
    for old, new in (("torch.cat(h, x)", "torch.cat(k, x)"), ("w = h", "w = k")):
        changes = (new, old, new)
        for call, fresh in taken_back_edits(live, sources, old, changes):
            assert live.solver is not None
            assert node_values(live.solver) == node_values(fresh), call
            assert named_edges(live.solver) == named_edges(fresh), call
            assert edge_makers(live.solver) == edge_makers(fresh), call
        sources = {**sources, "app/m.py": sources["app/m.py"].replace(old, changes[-1])}


def test_a_changed_call_in_a_method_with_copies_is_taken_back_in_each_copy() -> None:
    """``Head.forward`` runs for a ``Child`` and for a ``Head`` (a copy per receiver class): the
    call is handed its new arguments in each copy, a rebound one (``z = torch.cat(z, x)``)
    through a node of its own per copy, as a full solve hands them."""
    sources = copied_head("        h = torch.relu(x)\n        z = torch.tanh(x)\n        z = torch.cat(h, x)\n        return z\n")
    live = LiveSolve(linked(sources), {}, {}, False)
    assert live.solver is not None and any(copy.qualname == "Head.forward" for copy in live.solver.copies.values())
    calls = ("torch.cat(x, h)", "torch.cat(z, x)", "torch.cat(h, z)", "torch.cat(h, x)")
    for call, fresh in taken_back_edits(live, sources, "torch.cat(h, x)", calls):
        assert live.solver is not None
        assert node_values(live.solver) == node_values(fresh), call
        assert named_edges(live.solver) == named_edges(fresh), call
        assert len(live.solver.rebound) == len(fresh.rebound), call


def test_a_rebound_argument_gets_a_node_of_its_own_and_loses_it_again() -> None:
    """``z = torch.cat(h, x)`` to ``z = torch.cat(z, x)``: the call is handed what ``z`` held but
    the tensors ``torch.cat`` makes (``wrap_order.py``), through a node of its own watching
    ``z``, as a full solve hands it; changed again and back, that node's watcher goes."""
    sources = {"app/__init__.py": "", "app/m.py": HELPERS + CALLS}
    live = LiveSolve(linked(sources), {}, {}, False)
    calls = ("torch.cat(z, x)", "torch.cat(z, y)", "torch.cat(x, z)", "torch.cat(h, x)")
    for call, fresh in taken_back_edits(live, sources, "torch.cat(h, x)", calls):
        assert live.solver is not None
        assert len(live.solver.rebound) == len(fresh.rebound), call


def test_an_argument_the_edit_left_keeps_its_node() -> None:
    """``torch.dropout(h, p=self.rate, scale=x or y)`` with ``h`` changed: the attribute's load
    and the union's node of its own stay what the call is handed, as a full solve hands them;
    changed again and back, each edit is taken back."""
    body = """\
class Net(torch.nn.Module):
    def __init__(self):
        self.rate = torch.tensor(0)

    def forward(self, x, y):
        h = torch.relu(y)
        z = torch.dropout(h, p=self.rate, scale=x or y)
        return torch.mul(z, h)
"""
    sources = {"app/__init__.py": "", "app/m.py": HELPERS + body}
    live = LiveSolve(linked(sources), {}, {}, False)
    calls = ("torch.dropout(x, ", "torch.dropout(z, ", "torch.dropout(y, ", "torch.dropout(h, ")
    for call, fresh in taken_back_edits(live, sources, "torch.dropout(h, ", calls):
        assert live.solver is not None
        assert node_values(live.solver) == node_values(fresh), call
        assert named_edges(live.solver) == named_edges(fresh), call


WRAPPED_AFTER = """\
import ext


class Base(torch.nn.Module):
    def load(self, x):
        m = ext.ExtWrapper(x)
        m = torch.cat(x, x)
        return m


class Child(Base):
    def load(self, x):
        super().load(x)
        x = ext.ExtWrapper(x)
        return x


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.child = Child()
        self.base = Base()

    def forward(self, x):
        return self.child.load(x) + self.base.load(x)
"""


def test_a_rebound_argument_in_a_copy_is_handed_what_its_receiver_class_leaves() -> None:
    """``m = torch.cat(m, x)`` in ``Base.load``, whose override wraps in ``ext.ExtWrapper``
    after calling it (``wrap_order.py``): in the copy for a ``Child`` the call is handed what
    ``m`` held but the wrapper, in the copy for a ``Base`` all of it, as a full solve hands it."""
    sources = {"app/__init__.py": "", "app/m.py": HELPERS + WRAPPED_AFTER}
    live = LiveSolve(linked(sources), {}, {}, False)
    edited = linked({**sources, "app/m.py": sources["app/m.py"].replace("torch.cat(x, x)", "torch.cat(m, x)")})
    answer = live.extend(edited, {}, {}, False)
    assert not isinstance(answer, str) and live.rederived, answer
    assert live.solver is not None
    fresh = solve_kept(edited, {}, {})
    handed = site_arguments(live.solver)
    assert handed == site_arguments(fresh)
    in_child = [arguments for key, arguments in handed.items() if "@" in key and "Child" in key and "'ext.ExtWrapper'" not in repr(arguments)]
    assert in_child, handed  # (the copy for a Child left the wrapper out)
    fresh.release()
