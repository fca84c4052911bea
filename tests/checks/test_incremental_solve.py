"""The value graph extended in place (``incremental_solve.py``) answers exactly what a full solve
of the edited project answers: the same call edges, regions' inputs and values per named node.

A seeded random walk of edits over a small project in transformers' shape (a package whose
``__init__`` star-imports its modules, modules of helpers, layers and a model, a compile entry)
adds, removes and changes assignments, calls, imports, functions and classes, at the end of a
file or in its middle (which renumbers the calls after it). After every edit the graph that
``SolvedGraphs(incremental=True)`` gives (extended where it may, solved in full where it may not)
is compared with a fresh full solve; so are the values of every variable, call result and
attribute node of the kept solver against a fresh solver's."""

from __future__ import annotations

import gc
import json
import random
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from graphlint.checks import incremental_solve
from graphlint.checks.extract import extract_facts
from graphlint.checks.graph_cache import SolvedGraphs, graph_to_json
from graphlint.checks.incremental_solve import LiveSolve
from graphlint.checks.value_graph import CallGraph, LinkedModule
from graphlint.checks.valueflow import Solver, solve, solve_kept

BASE = {
    "app/__init__.py": "from .helpers import *\nfrom .layers import *\n",
    "app/helpers.py": """\
import torch


def count(mask):
    return int(mask.sum().item())


def scale(x, factor=2):
    return x * factor


def to_host(x):
    return x.cpu()


def finish(x):
    y = x
""",
    "app/layers.py": """\
import torch
from torch import nn

from .helpers import count, scale


class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4))

    def forward(self, x):
        return scale(x) * self.weight

    def extra(self):
        return self.weight


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = Norm()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        h = self.norm(x)
        return self.proj(h)
""",
    "app/model.py": """\
import torch
from torch import nn

from app import Block
from app.helpers import count


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.block = Block(width)

    def forward(self, x):
        y = self.block(x)
        z = y
""",
    "app/entry.py": """\
import torch

from app.model import Net


def build(width):
    return torch.compile(Net(width))


def run(x):
    model = build(4)
    out = model(x)
""",
}

# BASE where a layer runs an activation of several outside names: past a low OUTSIDE_CAP they
# collapse into OUTSIDE_ANY, and its ``forward`` calls it.
COLLAPSING = {
    **BASE,
    "app/helpers.py": BASE["app/helpers.py"].replace("import torch\n", "import torch\n\nACT = torch.relu or torch.tanh or torch.sigmoid\n", 1),
    "app/layers.py": BASE["app/layers.py"].replace("import count, scale", "import ACT, count, scale").replace(
        "return scale(x) * self.weight", "return ACT(scale(x)) * self.weight"
    ),
}

# BASE where a model holds a subclass of a layer and the layer itself: the layer's methods are
# copied per receiver class (``receiver_copies.py``), and its file ends in one of them.
WITH_COPIES = {
    **BASE,
    "app/head.py": """\
import torch
from torch import nn

from .helpers import count, scale, to_host


class Head(nn.Module):
    def forward(self, x):
        y = scale(x)
""",
    "app/model.py": BASE["app/model.py"].replace(
        "from app.helpers import count\n", "from app.helpers import count\nfrom app.head import Head\n\n\nclass Child(Head):\n    pass\n"
    ).replace("self.block = Block(width)", "self.block = Block(width)\n        self.head = Child()\n        self.plain = Head()").replace(
        "z = y", "z = self.head(y)\n        q = self.plain(y)"
    ),
}

# What an edit appends at a file's end: at module level, or (indented) in the function the file
# ends with. ``{n}`` numbers the edit.
MODULE_LEVEL = [
    "E{n} = int({n})",
    "E{n} = count(torch.ones(2))",
    "E{n} = to_host",
    "E{n} = [count, scale]",
    "E{n} = torch.ones({n})",
    "E{n} = torch.compile(count)",
    "from app.helpers import scale as s{n}",
    "def extra{n}(x):\n    return x.item()",
    "class Extra{n}(torch.nn.Module):\n    def forward(self, x):\n        return x.cpu()",
    "E{n} = scale(torch.ones(1), {n})",
]
IN_FUNCTION = [
    "    w{n} = x.item()",
    "    w{n} = torch.ones({n})",
    "    w{n} = int({n})",
    "    torch.cuda.synchronize()",
    "    w{n} = count(x)",
    "    w{n} = to_host(x)",
    "    w{n} = scale",
    "    y = x.cpu()",
]
IN_METHOD = [
    "        w{n} = self.block",
    "        w{n} = y.item()",
    "        w{n} = self.block.norm.extra()",
    "        self.block(y)",
    "        w{n} = count(y)",
    "        y = y.cpu()",
]
IN_COPIED_METHOD = [  # at the end of ``Head.forward`` (WITH_COPIES)
    "        w{n} = y.item()",
    "        w{n} = torch.ones({n})",
    "        w{n} = scale(y)",
    "        w{n} = scale",
]


def linked(sources: dict[str, str]) -> list[LinkedModule]:
    files = []
    for path in sorted(sources):
        module = path[: -len(".py")].replace("/", ".")
        package = module.endswith(".__init__")
        files.append(LinkedModule(module.removesuffix(".__init__"), package, extract_facts(sources[path].encode())))
    return files


def walked(
    base: dict[str, str], edit: Callable[[dict[str, str], random.Random], dict[str, str]], seed: int, steps: int = 30
) -> Iterator[tuple[int, dict[str, str], list[LinkedModule], CallGraph, SolvedGraphs]]:
    """A random walk of ``steps`` edits from ``base`` through one kept solve
    (``SolvedGraphs(incremental=True)``): per edit, its number, the sources, their linked files,
    the kept solve's answer and the graphs that keep it."""
    rng = random.Random(seed)
    sources = dict(base)
    graphs = SolvedGraphs(incremental=True)
    graphs.graph(linked(sources), {}, {})
    for n in range(steps):
        sources = edit(sources, rng)
        files = linked(sources)
        yield n, sources, files, graphs.graph(files, {}, {}), graphs


def canonical(graph: CallGraph) -> Any:
    """The graph's answers with every list sorted: the same answers, whatever order made them."""

    def sort(value: Any) -> Any:
        if isinstance(value, list):
            return sorted((sort(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
        if isinstance(value, dict):
            return {k: sort(v) for k, v in value.items()}
        return value

    return sort(graph_to_json(graph))


def node_values(solver: Solver) -> dict[str, Any]:
    """The values of the nodes named by what they stand for (empty ones left out: a solve may
    make a node another never asks for)."""
    named: dict[str, Any] = {}
    for table in ("variables", "results", "attributes", "constants", "decorated", "iterated"):
        for key, node in getattr(solver, table).items():
            if solver.values[node]:
                named[repr((table, key))] = sorted(map(repr, solver.values[node]))
    return named


def edit(sources: dict[str, str], rng: random.Random, n: int, base: dict[str, str] = BASE) -> dict[str, str]:
    """One random edit of one file of a project that started as ``base``."""
    path = rng.choice(sorted(p for p in sources if p != "app/__init__.py"))
    text = sources[path]
    lines = text.splitlines()
    kind = rng.random()
    if kind < 0.55:  # append at the end
        pool = IN_METHOD if path == "app/model.py" and rng.random() < 0.6 else IN_FUNCTION if rng.random() < 0.5 else MODULE_LEVEL
        if pool is IN_FUNCTION and path == "app/model.py":
            pool = MODULE_LEVEL
        if path == "app/head.py" and pool is not MODULE_LEVEL:
            pool = IN_COPIED_METHOD
        added = rng.choice(pool).format(n=n)
        if pool is MODULE_LEVEL and lines and lines[-1].startswith(" "):
            added = "\n\n" + added  # leave the function first
        text = text.rstrip("\n") + "\n" + added + "\n"
    elif kind < 0.7 and len(lines) > len(base[path].splitlines()):  # remove the last line added
        text = "\n".join(lines[:-1]) + "\n"
    elif kind < 0.85:  # insert a statement in the middle: the calls after it are numbered anew
        index = rng.randrange(len(lines) + 1)
        while index < len(lines) and lines[index].startswith((" ", ")")):
            index += 1
        lines.insert(index, f"M{n} = count(torch.zeros({n}))")
        text = "\n".join(lines) + "\n"
    else:  # change a call
        text = text.replace("count(", "scale(", 1) if rng.random() < 0.5 else text.replace("scale(", "count(", 1)
    return {**sources, path: text}


@pytest.mark.parametrize(
    ("seed", "preview", "outside_cap", "copies"),
    [*((seed, False, 16, False) for seed in range(8)), *((seed, True, 16, False) for seed in range(8, 12)),
     *((seed, False, 2, False) for seed in (13, 14, 15, 16, 17, 19)), *((seed, True, 2, False) for seed in (19, 20)),
     *((seed, False, 16, True) for seed in range(21, 25)), *((seed, True, 16, True) for seed in (25, 26))],
)
def test_the_extended_graph_is_the_full_solve_of_the_edited_project(
    seed: int, preview: bool, outside_cap: int, copies: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``preview``: with the per-call-site copies and their bounds (docs/callgraph.md "Preview");
    ``outside_cap`` 2: the solves collapse outside names (``OUTSIDE_ANY``), as real trees do (seeds
    whose walks keep ``ACT`` parsing: 12 and 18 break its file early, and nothing collapses after);
    ``copies``: a layer's methods copied per receiver class, edits appended in one of them."""
    monkeypatch.setattr("graphlint.checks.value_graph.OUTSIDE_CAP", outside_cap)
    extended: list[bool] = []
    collapsed: list[bool] = []
    real = LiveSolve.extend

    def counted(self: LiveSolve, *args: Any) -> Any:
        answer = real(self, *args)
        extended.append(not isinstance(answer, str))
        collapsed.append(not isinstance(answer, str) and answer.collapsed > 0)
        return answer

    monkeypatch.setattr(LiveSolve, "extend", counted)
    patches: list[bool] = []  # whether an extension's answer was patched (else finished in full)
    real_patched = incremental_solve.patched

    def patched(*args: Any) -> Any:
        answer = real_patched(*args)
        patches.append(answer is not None)
        return answer

    monkeypatch.setattr(incremental_solve, "patched", patched)
    rng = random.Random(seed)
    base = WITH_COPIES if copies else BASE if outside_cap == 16 else COLLAPSING
    sources = dict(base)
    graphs = SolvedGraphs(incremental=True)
    for n in range(1, 31):
        sources = edit(sources, rng, n, base)
        files = linked(sources)
        got = graphs.graph(files, {}, {}, preview)
        full = solve(files, preview=preview)
        assert canonical(got) == canonical(full), (seed, n, sources)
        live = graphs._live
        assert live is not None and live.solver is not None
        # (the kept solver is of the project it last solved or extended: an undo answered from
        # the graphs kept in memory leaves it as it is)
        fresh = solve_kept(list(live.solver.files), {}, {}, preview)
        assert node_values(live.solver) == node_values(fresh), (seed, n, sources)
        fresh.release()
    # the walk both extended and solved in full (else this test checks only one path)
    assert any(extended) and not all(extended), extended
    assert any(patches), patches  # and the answer patched at the new sites (``answer_patch.py``)
    if outside_cap == 2:  # and extended solves that collapse
        assert any(collapsed), (extended, collapsed)


INSERTED = ["w{n} = int({n})", "w{n} = torch.ones({n})", "w{n} = count", "w{n} = print(count)", "w{n} = scale(torch.ones(1))"]


def insert(sources: dict[str, str], rng: random.Random, n: int) -> dict[str, str]:
    """A statement inserted above a random line of a random file, at that line's indentation
    (in a function, a class body or at module level): the calls after it are numbered anew."""
    path = rng.choice(sorted(p for p in sources if p != "app/__init__.py"))
    lines = sources[path].splitlines()
    index = rng.choice([i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith(("from ", "import "))])
    indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
    lines.insert(index, indent + rng.choice(INSERTED).format(n=n))
    return {**sources, path: "\n".join(lines) + "\n"}


@pytest.mark.parametrize(("seed", "copies", "preview"), [(30, False, False), (31, False, True), (32, True, False), (33, True, True)])
def test_inserted_statements_extend_the_solve_as_a_full_solve_answers(seed: int, copies: bool, preview: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Statements inserted anywhere, one by one (``renumber.py``): every answer is the full
    solve's, and insertions were extended."""
    numbered: list[bool] = []
    real = LiveSolve.extend

    def counted(self: LiveSolve, *args: Any) -> Any:
        answer = real(self, *args)
        numbered.append(not isinstance(answer, str) and bool(self.numbered))
        return answer

    monkeypatch.setattr(LiveSolve, "extend", counted)
    rng = random.Random(seed)
    sources = dict(WITH_COPIES if copies else BASE)
    graphs = SolvedGraphs(incremental=True)
    for n in range(1, 21):
        sources = insert(sources, rng, n)
        files = linked(sources)
        assert canonical(graphs.graph(files, {}, {}, preview)) == canonical(solve(files, preview=preview)), (seed, n, sources)
    assert any(numbered), numbered


def test_an_added_call_that_reaches_an_existing_function_with_new_values_solves_in_full() -> None:
    """``count(torch.ones(2))`` at module level hands ``count``'s parameter a value from a new
    call site: a value an existing node did not hold, so the kept solve is not extended."""
    sources = dict(BASE)
    live = LiveSolve(linked(sources), {}, {}, False)
    sources["app/helpers.py"] += "\n\nE1 = to_host(print)\n"
    answer = live.extend(linked(sources), {}, {}, False)
    assert answer == "an added fact reaches a value the last solve derived"


def test_an_added_call_in_a_compiled_method_extends_the_graph_and_its_edges() -> None:
    sources = dict(BASE)
    files = linked(sources)
    live = LiveSolve(files, {}, {}, False)
    sources["app/model.py"] += "        w = self.block.norm(x)\n"
    edited = linked(sources)
    answer = live.extend(edited, {}, {}, False)
    assert isinstance(answer, CallGraph), answer
    assert canonical(answer) == canonical(solve(edited))
    model = next(i for i, f in enumerate(edited) if f.module == "app.model")
    new_call = len(files[model].facts.flow.calls)  # the one call the edit appended
    assert {t.qualname for t in answer.callees[model, new_call] if not isinstance(t, str)} == {"Norm.forward"}


@pytest.mark.parametrize(
    ("where", "added", "row"),
    [
        # a function handed to an outside call: something out of sight may call it
        ("app/helpers.py", "\n\nE1 = print(count)\n", lambda graph, file, ordinal: (file, "count", "*") in graph.unseen),
        # ``.tolist()`` of a tensor made on the host
        ("app/entry.py", "    h = out.cpu()\n    v = h.tolist()\n", lambda graph, file, ordinal: (file, ordinal + 1) in graph.host_receivers),
        # a call that resolves, to a function of the project
        ("app/entry.py", "    w = build(2)\n", lambda graph, file, ordinal: (file, ordinal) in graph.resolved),
    ],
)
def test_the_answer_is_patched_at_the_added_sites(where: str, added: str, row: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The extension's answer is the last one with the new sites' rows added (``answer_patch.py``),
    not finished in full, and it is the full solve's."""
    sources = dict(BASE)
    files = linked(sources)
    live = LiveSolve(files, {}, {}, False)
    monkeypatch.setattr(Solver, "finish", lambda self: pytest.fail("finished in full"))
    sources[where] += added
    edited = linked(sources)
    answer = live.extend(edited, {}, {}, False)
    assert isinstance(answer, CallGraph), answer
    monkeypatch.undo()
    assert canonical(answer) == canonical(solve(edited))
    file = next(i for i, f in enumerate(edited) if f.module == where[:-3].replace("/", "."))
    assert row(answer, file, len(files[file].facts.flow.calls))


def test_calls_inserted_above_others_extend_the_solve_in_its_own_numbering() -> None:
    """A call inserted above others numbers them anew; the kept solve numbers the inserted calls
    after the file's others (``renumber.py``), and the answer, in the file's own numbering, is
    the full solve's at each step: an insertion, an append after it, an insertion above both."""
    sources = dict(BASE)
    live = LiveSolve(linked(sources), {}, {}, False)
    steps = [
        ("    model = build(4)\n", "    w1 = int(1)\n    model = build(4)\n"),
        ("    out = model(x)\n", "    out = model(x)\n    w2 = int(2)\n"),
        ("    w1 = int(1)\n", "    w3 = build(3)\n    w1 = int(1)\n"),
    ]
    for before, after in steps:
        sources["app/entry.py"] = sources["app/entry.py"].replace(before, after)
        edited = linked(sources)
        answer = live.extend(edited, {}, {}, False)
        assert isinstance(answer, CallGraph), answer
        assert canonical(answer) == canonical(solve(edited)), after
        assert live.numbered  # the file is numbered otherwise in the solver
    entry = next(i for i, f in enumerate(edited) if f.module == "app.entry")
    ordinals = {site.text: o for o, site in enumerate(edited[entry].facts.flow.calls) if site is not None}
    assert {t.qualname for t in answer.callees[entry, ordinals["build"]] if not isinstance(t, str)} >= {"build"}


@pytest.mark.parametrize("added", ["        w = torch.ones(2)\n", "        w = scale(y)\n"])
def test_an_added_fact_in_a_method_with_copies_solves_in_full(added: str) -> None:
    """``Head.forward`` is copied for ``Child`` and for ``Head`` receivers: a full solve binds an
    added statement in each copy, an extension only in the shared body (it gave other call edges
    and values before this was refused)."""
    sources = dict(WITH_COPIES)
    live = LiveSolve(linked(sources), {}, {}, False)
    assert live.solver is not None and any(copy.qualname == "Head.forward" for copy in live.solver.copies.values())
    sources["app/head.py"] += added
    answer = live.extend(linked(sources), {}, {}, False)
    assert isinstance(answer, str) and answer.startswith("an added fact is in a function that has copies"), answer


@pytest.mark.parametrize(
    ("where", "added", "why"),
    [
        ("app/helpers.py", "\n\ndef extra(x):\n    return x.cpu()\n", "not an addition: defs"),
        ("app/model.py", "        w = count(torch.compile(y))\n", "not an addition: entry points changed"),
    ],
)
def test_what_is_not_an_addition_is_refused_with_its_reason(where: str, added: str, why: str) -> None:
    sources = dict(BASE)
    live = LiveSolve(linked(sources), {}, {}, False)
    sources[where] += added
    answer = live.extend(linked(sources), {}, {}, False)
    assert isinstance(answer, str) and answer.startswith(why), answer


def test_a_solve_that_hit_its_bounds_is_never_extended(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("graphlint.checks.value_graph.WORK_BUDGET", 40)
    sources = dict(BASE)
    live = LiveSolve(linked(sources), {}, {}, False)
    assert live.graph.stopped
    sources["app/entry.py"] += "    w = int(3)\n"
    assert live.extend(linked(sources), {}, {}, False) == "the last solve hit its bounds"


def test_a_kept_solver_is_frozen_for_the_collector_and_freed_without_it_once_released() -> None:
    """``gc.freeze`` is safe only if a released solver makes no cycles: it is then freed by
    reference counting, never by the cyclic collector that no longer sees it."""
    sources = dict(WITH_COPIES)
    collecting = gc.isenabled()
    gc.disable()
    try:
        live = LiveSolve(linked(sources), {}, {}, True)
        assert live.solver is not None and gc.get_freeze_count() > 0
        sources["app/model.py"] += "        w = self.block.norm(x)\n"
        assert isinstance(live.extend(linked(sources), {}, {}, True), CallGraph)
        kept = weakref.ref(live.solver)
        live.release()
        assert gc.get_freeze_count() == 0
        del live
        assert kept() is None
    finally:
        gc.unfreeze()
        if collecting:
            gc.enable()


def test_the_work_bound_covers_a_full_solves_steps() -> None:
    """``WORK_BUDGET`` is kept by the bound on a full solve's steps that the extension carries."""
    files = linked(dict(BASE))
    solver = solve_kept(files, {}, {})
    assert 0 < solver.steps <= incremental_solve._work_bound(solver, 0)
    solver.release()


# What a line typed and typed again reads as: each edit puts one of these in place of the line
# the last edit added (or removes it), as an editor sends a line being typed.
TYPED = ["w{n} = int({n})", "w{n} = torch.ones({n})", "w{n} = count", "w{n} = print(count)", "w{n} = scale(torch.ones(1))",
         "w{n} = x", "w{n} = to_host", "w{n} = int(count({n}))"]


def typed(sources: dict[str, str], rng: random.Random, n: int, line: tuple[str, int] | None) -> tuple[dict[str, str], tuple[str, int] | None]:
    """The line ``line`` (path, index) changed, removed, or (None, or at random) a new line
    inserted above a random line, at its indentation; and where the typed line now is."""
    if line is not None and rng.random() < 0.8:
        path, index = line
        lines = sources[path].splitlines()
        indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
        if rng.random() < 0.2:  # removed
            del lines[index]
            line = None
        else:
            lines[index] = indent + rng.choice(TYPED).format(n=n)
        return {**sources, path: "\n".join(lines) + "\n"}, line
    path = rng.choice(sorted(p for p in sources if p != "app/__init__.py"))
    lines = sources[path].splitlines()
    index = rng.choice([i for i, text in enumerate(lines) if text.strip() and not text.lstrip().startswith(("from ", "import "))])
    indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
    lines.insert(index, indent + rng.choice(TYPED).format(n=n))
    return {**sources, path: "\n".join(lines) + "\n"}, (path, index)


@pytest.mark.parametrize(
    ("seed", "copies", "preview", "outside_cap"),
    [(40, False, False, 16), (41, False, True, 16), (42, True, False, 16), (48, True, True, 16), *((seed, False, False, 2) for seed in range(51, 54)),
     (45, False, False, 16), (46, True, False, 2)],
)
def test_a_line_changed_or_removed_after_it_was_added_takes_the_extension_back(
    seed: int, copies: bool, preview: bool, outside_cap: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line inserted, then changed again and again or removed (``retraction.py``): every
    answer is the full solve's, the kept solver's node values a fresh solver's, and some edits
    were answered by taking the last extension back and extending again."""
    monkeypatch.setattr("graphlint.checks.value_graph.OUTSIDE_CAP", outside_cap)
    retracted: list[bool] = []
    real = incremental_solve.retract

    def counted(*args: Any) -> Any:
        why = real(*args)
        retracted.append(why is None)
        return why

    monkeypatch.setattr(incremental_solve, "retract", counted)
    extended: list[bool] = []
    real_extend = LiveSolve.extend

    def counted_extend(self: LiveSolve, *args: Any) -> Any:
        answer = real_extend(self, *args)
        extended.append(not isinstance(answer, str))
        return answer

    monkeypatch.setattr(LiveSolve, "extend", counted_extend)
    rng = random.Random(seed)
    base = WITH_COPIES if copies else BASE if outside_cap == 16 else COLLAPSING
    sources, line = dict(base), None
    graphs = SolvedGraphs(incremental=True)
    retractions = 0
    for n in range(1, 31):
        sources, line = typed(sources, rng, n, line)
        files = linked(sources)
        got = graphs.graph(files, {}, {}, preview)
        assert canonical(got) == canonical(solve(files, preview=preview)), (seed, n, sources)
        live = graphs._live
        assert live is not None and live.solver is not None
        fresh = solve_kept(list(live.solver.files), {}, {}, preview)
        assert node_values(live.solver) == node_values(fresh), (seed, n, sources)
        fresh.release()
        retractions += sum(retracted)
        retracted.clear()
    # edits changed the last added line, took its extension back and extended again
    assert retractions > 0 and any(extended), (retractions, extended)


def solver_state(solver: Solver) -> Any:
    """What a kept solver holds: every node's values, edges and number of watchers, every
    table's entries, the files' facts (not ``scoped_by_file``, a memo of each file's bodies that
    an extension fills for the file before it begins)."""
    state: dict[str, Any] = {
        "nodes": [(sorted(map(repr, v)), sorted(s), len(w)) for v, s, w in zip(solver.values, solver.successors, solver.watchers)],
        "files": [id(linked) for linked in solver.files],
        "declared": [sorted(names) for names in solver.declared],
    }
    for name, value in sorted(vars(solver).items()):
        if name == "scoped_by_file":
            continue
        if isinstance(value, dict) and all(isinstance(count, int) for count in value.values()):
            state[name] = sorted(map(repr, value.items()))  # counts (``repeated_edges``): by value too
        elif isinstance(value, dict):
            state[name] = [repr(key) for key in value]
        elif isinstance(value, (set, list)) and name not in ("values", "successors", "watchers", "files", "declared"):
            state[name] = sorted(map(repr, value))
    return state


@pytest.mark.parametrize(
    ("where", "before", "after"),
    [
        ("app/entry.py", "    out = model(x)\n", "    out = model(x)\n    w = int(count(x))\n"),  # appended
        ("app/entry.py", "    model = build(4)\n", "    w = print(count)\n    model = build(4)\n"),  # inserted
        ("app/model.py", "        z = y\n", "        z = y\n        w = self.block.norm(x)\n"),  # a method's
    ],
)
def test_removing_the_line_the_last_extension_added_leaves_the_solver_as_before_it(where: str, before: str, after: str) -> None:
    """Added, then removed: the kept solver is the one before the addition, node by node and
    table by table (``retraction.py``), and the answer the full solve's."""
    sources = dict(BASE)
    files = linked(sources)
    live = LiveSolve(files, {}, {}, False)
    assert live.solver is not None
    state = solver_state(live.solver)
    sources[where] = sources[where].replace(before, after)
    assert isinstance(live.extend(linked(sources), {}, {}, False), CallGraph)
    assert solver_state(live.solver) != state
    answer = live.extend(files, {}, {}, False)  # the edit taken back: the files as first solved
    assert isinstance(answer, CallGraph), answer
    assert solver_state(live.solver) == state
    assert canonical(answer) == canonical(solve(files))


def test_a_change_to_a_line_the_last_extension_did_not_add_solves_in_full() -> None:
    """Only what the last extension added can be taken back: a line of the first solve changed
    (``int(3)`` for ``build(4)``) is no addition to the solve before that extension either."""
    sources = dict(BASE)
    live = LiveSolve(linked(sources), {}, {}, False)
    sources["app/entry.py"] += "    w = int(2)\n"
    assert isinstance(live.extend(linked(sources), {}, {}, False), CallGraph)
    sources["app/entry.py"] = sources["app/entry.py"].replace("model = build(4)", "model = int(3)")
    answer = live.extend(linked(sources), {}, {}, False)
    assert isinstance(answer, str) and answer.startswith("not an addition"), answer
    assert live.solver is None


def test_a_journal_that_does_not_know_a_table_of_the_solver_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table added to the solver that the journal does not know how to take back: the line
    changed again solves in full, never with that table left extended."""
    sources = dict(BASE)
    live = LiveSolve(linked(sources), {}, {}, False)
    assert live.solver is not None
    live.solver.someday = {}  # type: ignore[attr-defined]
    sources["app/entry.py"] += "    w = int(2)\n"
    assert isinstance(live.extend(linked(sources), {}, {}, False), CallGraph)
    sources["app/entry.py"] = sources["app/entry.py"].replace("w = int(2)", "v = int(2)")
    assert live.extend(linked(sources), {}, {}, False) == "the solver holds tables the journal does not know (someday)"


def test_a_line_typed_after_the_graph_came_from_the_cache_is_taken_back_at_the_next_edit(tmp_path: Any) -> None:
    """Opened with its graph from the cache there is no solver to extend: the first edit that
    adds solves the project before it, keeps it and extends it, so that the same line changed at
    the next edit is taken back (``retraction.py``), not solved in full again and again."""
    from graphlint.checks.cache import FactsCache
    from graphlint.checks.facts import ExtractOptions

    sources = dict(BASE)
    SolvedGraphs(FactsCache(tmp_path, ExtractOptions())).graph(linked(sources), {}, {})  # fills the cache
    graphs = SolvedGraphs(FactsCache(tmp_path, ExtractOptions()), incremental=True)
    graphs.graph(linked(sources), {}, {})
    assert graphs._live is None  # read from the cache
    for n, line in enumerate(["    w = int(1)\n", "    v = int(2)\n", "    v = print(count)\n"]):
        edited = {**sources, "app/entry.py": sources["app/entry.py"] + line}
        files = linked(edited)
        assert canonical(graphs.graph(files, {}, {})) == canonical(solve(files)), line
        live = graphs._live
        assert live is not None and live.solver is not None and live.retracted == (n > 0), line


def test_a_change_to_a_line_added_two_extensions_ago_solves_in_full() -> None:
    """The journal holds the last extension only: a line added the extension before it, changed,
    is no addition to the solve before the last extension, and solves in full."""
    sources = dict(BASE)
    live = LiveSolve(linked(sources), {}, {}, False)
    for line in ("    a = int(1)\n", "    b = int(2)\n"):
        sources["app/entry.py"] += line
        assert isinstance(live.extend(linked(sources), {}, {}, False), CallGraph)
    sources["app/entry.py"] = sources["app/entry.py"].replace("a = int(1)", "c = int(1)")
    answer = live.extend(linked(sources), {}, {}, False)
    assert isinstance(answer, str) and answer.startswith("not an addition"), answer
    assert live.solver is None and not live.retracted
