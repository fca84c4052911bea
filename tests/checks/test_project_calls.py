"""Changed arguments of calls to project code, taken back in the kept solve where the edit moves
no value (``project_calls.py``, through ``rederive.py``): the answer, the values of every named
node, the edges between them with how many makers each has, the per-file tables, what each call
is handed and the pass-through entries are a fresh full solve's.

A seeded random walk gives the arguments of calls of a small model in transformers' shape (layers
calling layers, helpers, a function that returns its parameter) other names of their scope, or
puts a line back; after each edit the graph ``SolvedGraphs`` gives is compared with a fresh
full solve."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from graphlint.checks import project_calls
from graphlint.checks.incremental_solve import LiveSolve
from graphlint.checks.valueflow import Solver, solve, solve_kept

from .test_call_retraction import CALL, CALLS, edge_makers, named_nodes, named_watchers, scope_of, site_arguments, taken_back_edits
from .test_incremental_solve import canonical, linked, node_values, walked
from .test_rederive import HELPERS, file_tables, named_edges

LAYERS = """\
import torch

from .helpers import count, scale


def keep(p):
    return p


def norm(x, w):
    y = torch.relu(x)
    return torch.mul(y, w)


class MLP(torch.nn.Module):
    def forward(self, x, gate):
        h = torch.relu(x)
        g = norm(h, gate)
        k = keep(g)
        return torch.add(k, h)


class Block(torch.nn.Module):
    def forward(self, hidden, mask):
        a = torch.relu(hidden)
        b = torch.tanh(mask)
        c = self.mlp(a, b)
        d = norm(c, a)
        e = keep(d)
        f = scale(e, b)
        return torch.add(f, e)


class Model(torch.nn.Module):
    def forward(self, ids, mask):
        s = torch.relu(ids)
        t = self.block(s, mask)
        u = self.block(t, mask)
        return keep(u)


MODEL = Model()(torch.ones(1), torch.ones(2))
"""

BASE = {"app/__init__.py": "", "app/helpers.py": HELPERS.replace("import torch\n", "import torch\n\n"), "app/layers.py": LAYERS}
SCOPES = {
    "keep": ["p"],
    "norm": ["x", "w", "y"],
    "forward": [],  # per class, below
}
FORWARD = {
    "MLP": ["x", "gate", "h", "g", "k"],
    "Block": ["hidden", "mask", "a", "b", "c", "d", "e", "f"],
    "Model": ["ids", "mask", "s", "t", "u"],
}


def names_in_scope(lines: list[str], index: int) -> list[str]:
    scope = scope_of(lines, index)
    if scope != "forward":
        return SCOPES[scope]
    owner = next(re.match(r"class (\w+)", line)[1] for line in reversed(lines[:index]) if line.startswith("class "))  # type: ignore[index]
    return FORWARD[owner]


def edit(sources: dict[str, str], rng: random.Random) -> dict[str, str]:
    """One call's argument given another name of its scope, or a line put back as it was."""
    lines = sources["app/layers.py"].splitlines()
    base = LAYERS.splitlines()
    changed = [i for i, line in enumerate(lines) if line != base[i]]
    if changed and rng.random() < 0.2:
        index = rng.choice(changed)
        lines[index] = base[index]
    else:
        index = rng.choice([i for i, line in enumerate(lines) if CALL.match(line) and not line.startswith("MODEL")])
        found = CALL.match(lines[index])
        assert found is not None
        arguments = found[4].split(", ")
        at = rng.randrange(len(arguments))
        arguments[at] = rng.choice(names_in_scope(lines, index))
        lines[index] = f"{found[1]}{f'{found[2]} = ' if found[2] else 'return '}{found[3]}({', '.join(arguments)})"
    return {**sources, "app/layers.py": "\n".join(lines) + "\n"}


def pass_entries(solver: Solver) -> list[Any]:
    """The pass-through entries of each function (``PassThrough.bind_passes``): the call, its
    arguments and result by name."""
    names = named_nodes(solver)
    return sorted(
        repr((function, site, names.get(out), [names.get(n) for n in args.positional], [(k, names.get(n)) for k, n in args.keywords]))
        for function, entries in solver.pass_sites.items()
        for _, args, out, (site, _) in entries
    )


def compared(live: LiveSolve, files: Any, context: Any) -> None:
    assert live.solver is not None
    fresh = solve_kept(list(live.solver.files), {}, {})
    try:
        assert node_values(live.solver) == node_values(fresh), context
        assert named_edges(live.solver) == named_edges(fresh), context
        assert edge_makers(live.solver) == edge_makers(fresh), context
        assert file_tables(live.solver) == file_tables(fresh), context
        assert site_arguments(live.solver) == site_arguments(fresh), context
        assert named_watchers(live.solver) == named_watchers(fresh), context
        assert pass_entries(live.solver) == pass_entries(fresh), context
    finally:
        fresh.release()


@pytest.mark.parametrize(("seed", "outside_cap"), [*((seed, 16) for seed in range(8)), *((seed, 1) for seed in (8, 10, 12, 13))])
def test_changed_arguments_of_project_calls_are_taken_back_as_a_full_solve_answers(
    seed: int, outside_cap: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``outside_cap`` 1: the tensors collapse the outside names (``OUTSIDE_ANY``)."""
    monkeypatch.setattr("graphlint.checks.value_graph.OUTSIDE_CAP", outside_cap)
    outcomes: list[bool] = []
    real = project_calls.swapped

    def counted(solver: Solver, calls: Any) -> Any:
        swap = real(solver, calls)
        outcomes.append(not isinstance(swap, str))
        return swap

    monkeypatch.setattr("graphlint.checks.rederive.swapped", counted)
    for n, sources, files, got, graphs in walked(BASE, edit, seed):
        assert canonical(got) == canonical(solve(files)), (seed, n, sources["app/layers.py"])
        assert graphs._live is not None
        compared(graphs._live, files, (seed, n, sources["app/layers.py"]))
    # the walk both swapped project calls' arguments and refused to (else it checks one path)
    assert any(outcomes) and not all(outcomes), outcomes


TWICE = """\
def g(a, b):
    u = first(a)
    v = first(a)
    return [u, v]


OUT = g(torch.ones(1), torch.ones(2))
"""


def test_an_edge_another_call_makes_too_stays_with_one_maker_less() -> None:
    """``first(a)`` twice: the edge ``g.a → first.x`` has two makers; one call handed ``b``
    instead leaves it with one, and adds ``g.b → scale.x``; handed ``a`` again, two."""
    sources = {"app/__init__.py": "", "app/m.py": HELPERS + TWICE}
    live = LiveSolve(linked(sources), {}, {}, False)
    assert live.solver is not None and edge_makers(live.solver)
    for call, fresh in taken_back_edits(live, sources, "v = first(a)", ("v = first(b)", "v = first(a)", "v = first(b)")):
        assert live.solver is not None
        assert named_edges(live.solver) == named_edges(fresh), call
        assert edge_makers(live.solver) == edge_makers(fresh), call


PASSING = """\
def keep(p):
    return p


def g(a, b):
    u = keep(a)
    return [u, b]


OUT = g(torch.ones(1), torch.ones(2))
"""


def test_a_function_that_returns_its_parameter_hands_back_the_new_argument() -> None:
    """``keep`` returns its parameter as given (``pass_through.py``): the call's result reads its
    own argument, through the pass-through entry the site keeps, which the swap replaces."""
    sources = {"app/__init__.py": "", "app/m.py": HELPERS + PASSING}
    live = LiveSolve(linked(sources), {}, {}, False)
    for call, fresh in taken_back_edits(live, sources, "keep(a)", ("keep(b)", "keep(a)")):
        assert live.solver is not None
        assert named_edges(live.solver) == named_edges(fresh), call
        assert pass_entries(live.solver) == pass_entries(fresh), call


def test_an_outside_call_that_passes_its_arguments_through_is_taken_back_where_they_hold_no_project_object() -> None:
    """``list(h, x)`` hands its arguments on as its result (edges, as a project call's are) and
    to code outside: its new arguments, tensors, decide nothing there."""
    sources = {"app/__init__.py": "", "app/m.py": HELPERS + CALLS.replace("torch.cat", "list")}
    live = LiveSolve(linked(sources), {}, {}, False)
    for call, fresh in taken_back_edits(live, sources, "list(h, x)", ("list(h, y)", "list(h, x)", "list(h, y)")):
        assert live.solver is not None
        assert node_values(live.solver) == node_values(fresh), call
        assert named_edges(live.solver) == named_edges(fresh), call


REFUSED = """\
class Wrapper:
    def __init__(self, inner):
        self.inner = inner


def keep(p):
    return p


def g(a, b, m):
    y = torch.relu(a)
    x = keep(y)
    w = Wrapper(m)
    z = keep(first)
    v = list(a)
    return [x, b, w, z, v]


OUT = g(torch.ones(1), A(), Wrapper(None))
"""


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        ("x = keep(y)", "x = keep(b)", "the changed call gives a parameter values it lacks"),
        ("z = keep(first)", "z = keep(a)", "the changed call takes values from a parameter"),
        # ``x`` is what ``keep`` returns: the cycle ``x → keep.p → x`` would lose its support
        ("x = keep(y)", "x = keep(x)", "a node the changed call reads depends on what it binds"),
        ("w = Wrapper(m)", "w = Wrapper(w)", "a changed call of project code hands a rebound argument"),
        ("v = list(a)", "v = list(m)", "the changed call hands a project function, class or instance to code outside the project"),
    ],
)
def test_a_changed_project_call_that_may_move_a_value_is_refused_with_its_reason(old: str, new: str, why: str) -> None:
    sources = {"app/__init__.py": "", "app/m.py": HELPERS + REFUSED}
    live = LiveSolve(linked(sources), {}, {}, False)
    answer = live.extend(linked({**sources, "app/m.py": sources["app/m.py"].replace(old, new)}), {}, {}, False)
    assert isinstance(answer, str) and why in answer, answer


READ_AT_THE_FIXED_POINT = """\
def hook(p=first):
    return p


def typed(p):
    if isinstance(p, A):
        return p
    return None


def g(a, b):
    x = hook(a)
    t = typed(a)
    return [x, t]


print(hook)
OUT = g(torch.ones(1), torch.ones(2))
"""


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        # ``hook`` is handed out of sight: its parameter takes its default at the fixed point
        ("hook(a)", "hook(b)", "a value the changed call binds was derived after the first fixed point"),
        # the ``isinstance`` guard watches the argument itself (``instance_guards.py``)
        ("typed(a)", "typed(b)", "the changed call does more with its arguments than bind them"),
    ],
)
def test_a_changed_project_call_read_by_a_decision_or_a_guard_is_refused(old: str, new: str, why: str) -> None:
    sources = {"app/__init__.py": "", "app/m.py": HELPERS + READ_AT_THE_FIXED_POINT}
    live = LiveSolve(linked(sources), {}, {}, False)
    answer = live.extend(linked({**sources, "app/m.py": sources["app/m.py"].replace(old, new)}), {}, {}, False)
    assert isinstance(answer, str) and why in answer, answer


def test_a_call_whose_bound_values_reach_past_the_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(project_calls, "DEPENDENTS_CAP", 1)
    sources = {"app/__init__.py": "", "app/m.py": HELPERS + TWICE}
    live = LiveSolve(linked(sources), {}, {}, False)
    answer = live.extend(linked({**sources, "app/m.py": sources["app/m.py"].replace("v = first(a)", "v = first(b)")}), {}, {}, False)
    assert isinstance(answer, str) and "reaches too many nodes to prove" in answer, answer


SUPPORTED = """\
def keep(p):
    q = torch.relu(p)
    if p:
        q = p
    return q


def g(a, b):
    u = keep(a)
    return u


def h(x):
    return keep(x)


def cycle(a, b):
    u = keep(a)
    v = keep(u)
    return v


OUT = g(first, torch.ones(1))
OTHER = h(first)
MORE = keep(torch.zeros(1))
LOOP = cycle(second, torch.ones(2))
"""


def test_a_value_the_changed_call_takes_stays_where_another_call_still_binds_it() -> None:
    """``keep(a)`` handed ``b`` instead: ``keep.p`` loses ``first`` from this call, but
    ``h``'s ``keep(x)`` still hands it ``first`` (re-derived: ``project_calls.supports``), so
    no value moves and the arguments are swapped, as a full solve answers; and back."""
    sources = {"app/__init__.py": "", "app/m.py": HELPERS + SUPPORTED}
    live = LiveSolve(linked(sources), {}, {}, False)
    for call, fresh in taken_back_edits(live, sources, "    u = keep(a)\n    return u", ("    u = keep(b)\n    return u", "    u = keep(a)\n    return u")):
        assert live.solver is not None
        assert node_values(live.solver) == node_values(fresh), call
        assert named_edges(live.solver) == named_edges(fresh), call
        assert edge_makers(live.solver) == edge_makers(fresh), call


def test_a_support_that_depends_on_what_the_changed_call_binds_is_refused() -> None:
    """In ``cycle``, ``keep(u)`` hands ``keep.p`` ``second`` back only through ``u``, what
    ``keep(a)`` returns: handed ``b``, a full solve gives ``keep.p`` no ``second`` (the cycle
    ``keep.p → u → keep.p`` has no other support), so that support is no proof and the loss
    stays unsupported."""
    sources = {"app/__init__.py": "", "app/m.py": HELPERS + SUPPORTED}
    live = LiveSolve(linked(sources), {}, {}, False)
    edited = sources["app/m.py"].replace("    u = keep(a)\n    v = keep(u)", "    u = keep(b)\n    v = keep(u)")
    assert edited != sources["app/m.py"]
    answer = live.extend(linked({**sources, "app/m.py": edited}), {}, {}, False)
    assert isinstance(answer, str) and "the changed call takes values from a parameter" in answer, answer
