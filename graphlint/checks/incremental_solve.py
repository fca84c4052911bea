"""A solved value graph kept with its solver and extended in place when an edit only adds.

``graphlint server`` solves the whole project again whenever an edit changes what flows where
(21 CPU-s on transformers' ``models/``). Here the solver of the last solve is kept (nodes, edges,
watchers) and, when the project differs from it in one file whose new flow facts are the old ones
with assignments and calls appended (no definition, decoration, entry or iteration changed),
the new facts are added to it and the worklist continues. Calls inserted above others are
appended in the solver's own numbering of the file (``renumber.py``; ``LiveSolve.numbered``),
and the answer is given back in the file's. The answer must be
the one a full solve of the edited project gives, so the continuation is taken only where that
follows, and otherwise ``extend`` says why not and the caller solves in full:

- The value graph is monotone (values and edges only grow, each reaction is a union) except where
  the solve's bounds cut it (a saturated set, the work budget) and at the decisions taken at the
  fixed point (an undecided decoration hands its function back, the defaults of functions no call
  bound, ``settle``). So the last solve must have hit neither bound, and the continuation neither.
  Outside names collapsed into ``OUTSIDE_ANY`` are no such cut: the collapse is absorbing, the
  join of a lattice (``value_graph.py``), so the solve reaches the one least fixed point in any
  order, this continuation's too; a delivery of outside names into an existing node that holds
  ``OUTSIDE_ANY`` gives it nothing.
- The added facts may read every existing node but give none of them a new value, and deliver
  again only into nodes that held all their values at the first fixed point, before any decision
  (``ValueGraph.late``): then each existing node is derived exactly as before, round by round of
  the decisions, and the new nodes only read them. Any other delivery into an existing node
  stops the continuation.
  The tables the fixed-point decisions read (functions bound, classes constructed, defaults
  added, decorations made, methods' copies) and the names each file declares must not grow.
- A name the added assignments bind must be fresh: no old fact of the file mentions it, no node
  or attribute lookup of that name exists, and it is no protocol method (``__call__``...), so no
  old lookup would have found it. The solver's tables computed from the files are computed again
  for the new facts, those per file (``file_tables.per_file``) in the edited file's row only;
  they may differ only by such fresh names and by the new calls' ordinals.
- No added fact may be in a function that has copies (a method copied per receiver class or
  call site, ``receiver_copies.py``): a full solve binds it in every copy, the continuation only
  in the function's own body.
- The decisions at the fixed point read only the new calls: the defaults of what they hand to
  outside calls (the other calls gave theirs, and what decides them may not grow), no
  decoration (each was decided on existing nodes, which keep their values).

The answer is the last one with the new sites' rows added (``answer_patch.py``), not built
again from the whole solver; where an edge went elsewhere than a new site, it is built again.
- The work budget: a full solve's steps (values delivered plus reactions run) are at most
  ``sum((|values(n)| + c(n)) * (1 + |watchers(n)|))`` over its nodes, since each node takes each
  value once and each of its watchers reacts at most once per batch; ``c(n)`` is OUTSIDE_CAP for
  a node that holds ``OUTSIDE_ANY`` (the names it held before the collapse, dropped then), else 0. That bound, kept up to date here,
  must stay within ``WORK_BUDGET``, so that the full solve would not have stopped either.

Removing or changing facts is handled where they are what the last extension added: its
journal (``retraction.py``) takes it back exactly, and the edit is tried again as an addition to
the solve before it; and where they are assignments to a function's variables that nothing but
such variables and outside calls read: their values are derived again in place (``rederive.py``),
the changed arguments of calls that hand nothing of the project out of sight are replaced
(``call_retraction.py``), and those of calls to project code swapped where the edit moves no
value (``project_calls.py``). Any other removal or change solves in full.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import logging
from collections.abc import Callable, Iterable
from itertools import islice
from typing import Any

from graphlint.checks import apis
from graphlint.checks.addition import edited_file, in_a_copy, not_appended, solver_text, tables_again
from graphlint.checks.answer_patch import Recorder, added_entries, patched
from graphlint.checks.class_hierarchy import assigned_variables
from graphlint.checks.receiver_copies import scoped_bodies
from graphlint.checks.rederive import rederive
from graphlint.checks.renumber import answer_in, in_numbering, inserted
from graphlint.checks.retraction import Journal, mass, retract
from graphlint.checks.value_graph import (
    OUTSIDE_ANY,
    WORK_BUDGET,
    CallGraph,
    LinkedModule,
    Obj,
    ValueGraph,
    collapsible,
    delivered,
)
from graphlint.checks.valueflow import Solver, solve_kept

log = logging.getLogger(__name__)

# Solver tables read by the decisions at the fixed point, or bounded: the continuation may not
# add to them (``receiver_copies.py``'s copies are bounded per method, so which ones exist hangs
# on the order).
_NOT_GROWING = (
    "bound_functions", "constructed", "defaulted", "decorations_made", "copies", "copy_counts",
    "rest_nodes", "passes_found", "refused", "saturated", "declared",
)


class _Touched(Exception):
    """The continuation delivered into a node that existed before it."""


class LiveSolve:
    """The last solve of a project with its solver, for ``extend``."""

    def __init__(
        self,
        files: list[LinkedModule],
        dispatch: dict[str, tuple[str, ...]],
        not_dispatched: dict[str, tuple[str, ...]],
        preview: bool,
    ) -> None:
        self.settings = (dispatch, not_dispatched, preview)
        solver = solve_kept(list(files), dispatch, not_dispatched, preview)
        assert solver.answer is not None
        self.graph: CallGraph = solver.answer
        self.work = 0
        self._names_read: set[str] | None = None  # ``_looked_up``, of the attributes up to:
        self._attributes_read = 0
        # file → (the file as last given, its calls' numbers in the solver) where a call was
        # inserted above others (``renumber.py``): the solver numbers them otherwise
        self.numbered: dict[int, tuple[LinkedModule, list[int]]] = {}
        self._copied: dict[int, list[tuple[Any, ...]]] | None = None  # ``_own_numbers``
        # what the last extension changed, to take it back (``retraction.py``); the one under way
        self._journal: Journal | None = None
        self._taking: Journal | None = None
        self.retracted = False  # whether the last ``extend`` took the last extension back and extended
        self.rederived = False  # whether it re-derived changed assignments (``rederive.py``)
        # A solve that hit its bounds is never extended: not kept (on transformers' models/,
        # keeping its millions of objects alive doubled the CPU of the next edits).
        self.solver: Solver | None = solver
        if bounded(solver):
            self.release()
        else:
            self.work = _work_bound(solver, 0)
            # The kept solver is millions of objects, made while the cyclic collector was off
            # (``Solver.solved``): its next passes over them cost seconds at a later edit (13.7 s
            # on models/ at the edit after a full solve). Frozen, the collector skips them; they
            # make no cycles once ``release`` broke the watchers' (reference counting frees them).
            gc.freeze()

    def release(self) -> None:
        self._journal = self._taking = None
        if self.solver is not None:
            self.solver.release()
            self.solver = None
            gc.unfreeze()  # what else was frozen with it is the collector's again

    def extend(
        self,
        files: list[LinkedModule],
        dispatch: dict[str, tuple[str, ...]],
        not_dispatched: dict[str, tuple[str, ...]],
        preview: bool,
    ) -> CallGraph | str:
        """The graph of ``files`` (the same a full solve gives), or why it cannot be had by
        extending the kept solve. After a refusal the kept solver is of no more use (it may be
        half extended): the caller solves in full."""
        solver = self.solver
        self.retracted = self.rederived = False
        if solver is None:
            return "the last solve hit its bounds" if bounded(self.graph) else "no kept solve"
        if (dispatch, not_dispatched, preview) != self.settings:
            return "the framework dispatch or preview changed"
        # the files as the project numbers their calls (the solver may number some otherwise)
        own = [self.numbered[i][0] if i in self.numbered else linked for i, linked in enumerate(solver.files)]
        edit = edited_file(own, files)
        if isinstance(edit, str):
            return edit
        if edit is None:  # nothing the solve reads changed
            return self._own_numbers(self.graph)
        new = files[edit]
        answer = self._added(solver, edit, own[edit], new)
        journal = self._journal
        taken_back = True  # the solver is the kept solve, or the one before its last extension
        if isinstance(answer, str) and self._taking is None and journal is not None and journal.file == edit:
            # not an addition to the kept solve, and nothing of it changed: maybe one to the
            # solve before its last extension (the edit changed or removed what that added)
            self._journal = None
            why = retract(solver, journal)
            if why is None:
                self.retracted = True
                self.graph, self.work, self._copied = journal.graph, journal.work, None
                self._attributes_read = min(self._attributes_read, len(solver.attributes))
                self.numbered.pop(edit, None)
                if journal.numbered is not None:
                    self.numbered[edit] = journal.numbered
                answer = self._added(solver, edit, journal.own, new)
            else:
                answer, taken_back = why, False
        if isinstance(answer, str) and self._taking is None and taken_back:
            # neither, and the solver as it was: assignments the full solve saw changed or removed
            answer = self._rederived(solver, edit, new, answer)
        if isinstance(answer, str):
            self.retracted = self.rederived = False
            self.release()
            return answer
        return self._own_numbers(answer)

    def _added(self, solver: Solver, edit: int, before: LinkedModule, new: LinkedModule) -> CallGraph | str:
        """The graph of the project with ``new`` in place of ``before`` (file ``edit``), the
        solver extended by what ``new`` adds, or why not (``self._taking``: the journal of the
        extension, if it began: then the solver is changed)."""
        self._taking = None
        solved, numbering = self._in_solver_numbering(solver, edit, before, new)
        try:
            answer = self._continue(solver, edit, solved, before) if solved is not None else "not an addition: assignments changed"
        except _Touched:
            answer = "an added fact reaches a value the last solve derived"
        if isinstance(answer, str):
            return answer
        self._journal, self._taking = self._taking, None
        if numbering is None:
            self.numbered.pop(edit, None)
        else:
            self.numbered[edit] = (new, numbering)
        return answer

    def _rederived(self, solver: Solver, edit: int, new: LinkedModule, refused: str) -> CallGraph | str:
        """The graph with the edited file's changed assignments re-derived (``rederive.py``), or
        why not (both refusals)."""
        work = "the solver numbers the file's calls otherwise" if edit in self.numbered else rederive(solver, edit, new)
        if isinstance(work, str):
            return f"{refused}; not re-derived: {work}"
        self._journal, self.rederived, self.work = None, True, self.work + work  # (the journal would restore the file only)
        if self.work > WORK_BUDGET:
            return "a full solve might reach the work budget"
        # nothing outside the nodes re-derived reads them: the answer is the last one
        self.graph = dataclasses.replace(self.graph, collapsed=solver.collapsed)
        return self.graph

    def _in_solver_numbering(
        self, solver: Solver, file: int, before: LinkedModule, new: LinkedModule
    ) -> tuple[LinkedModule | None, list[int] | None]:
        """``new`` as the solver numbers the file's calls, with that numbering (None: the
        file's own); None where the kept assignments are not all in it."""
        kept = solver.files[file].facts
        calls = len(kept.flow.calls)
        numbering = inserted(before.facts, new.facts, self.numbered[file][1] if file in self.numbered else list(range(calls)), calls)
        if numbering is None or numbering == list(range(len(numbering))):
            return new, None  # removed calls (the extension says so), or the same numbering
        facts = in_numbering(new.facts, numbering, kept.flow.assigns)
        return (None if facts is None else LinkedModule(new.module, new.is_package, facts)), numbering

    def _own_numbers(self, graph: CallGraph) -> CallGraph:
        """``graph`` with the calls of each file numbered as the file numbers them."""
        if not self.numbered:
            return graph
        if self._copied is None:  # the keys of ``graph.copies`` per file, kept as sites are added
            self._copied = {}
            for key in graph.copies:
                if isinstance(key[0], int):
                    self._copied.setdefault(key[0], []).append(key)
        return answer_in(graph, {file: numbering for file, (_, numbering) in self.numbered.items()}, self._copied)

    def _looked_up(self, solver: Solver) -> set[str]:
        """The names some attribute lookup of the solve reads, or may: kept up to date as the
        lookups only grow (the solve has hundreds of thousands)."""
        if self._names_read is None:
            self._names_read = set(apis.INSTANCE_CALL_METHODS) | {"__init__"}
            self._names_read.update(method for _, methods in solver.dispatch for method in methods)
        self._names_read.update(name for _, name in added_entries(solver.attributes, self._attributes_read))
        self._attributes_read = len(solver.attributes)
        return self._names_read

    def _continue(self, solver: Solver, file: int, new: LinkedModule, own: LinkedModule) -> CallGraph | str:
        old = solver.files[file]
        why = not_appended(old.facts, new.facts)
        if why is not None:
            return why
        scoped = scoped_bodies(new)
        if in_a_copy(solver, file, scoped):
            return "an added fact is in a function that has copies"
        old_text = solver_text(old.facts)
        looked_up = self._looked_up(solver)
        params = {f"{q}.{p}" for q, d in old.facts.flow.defs.items() for p, _ in d.params}

        def fresh(item: Any) -> bool:
            if isinstance(item, int):  # an ordinal: of a new call
                return item >= len(old.facts.flow.calls)
            return (
                isinstance(item, str) and json.dumps(item) not in old_text and (file, item) not in solver.variables
                and item not in params and item.rpartition(".")[2] not in looked_up
            )

        added = new.facts.flow.assigns[len(old.facts.flow.assigns):]
        names = {target[1] for target, _ in added if target[0] == "v"}
        if not all(fresh(name) for name in names):
            return "an added assignment binds a name the project already reads"
        # the new facts in place, and every table the solver computed from the files again
        journal = self._taking = Journal(solver, file, len(old.facts.flow.calls), self.graph, self.work, own, self.numbered.get(file))
        solver.files[file] = new
        solver.classes.assigned[file] = assigned_variables(new.facts)
        solver.declared[file] |= names
        solver.scoped_by_file[file] = scoped
        why = tables_again(solver, file, fresh)
        if why is not None:
            return why
        sizes = {name: mass(getattr(solver, name)) for name in _NOT_GROWING}
        implicit = mass(solver.graph.implicit_calls)
        patched_classes = len(solver.patched)
        existing = len(solver.values)
        watched: list[int] = []
        recorder = Recorder(solver, file, len(old.facts.flow.calls))
        solver.add = _guarded_add(solver, existing)  # type: ignore[method-assign]
        journal.record(solver, watched)
        solver.record = recorder.wrap(solver)  # type: ignore[method-assign]
        # the defaults the fixed point gives functions handed to outside calls: only the new
        # calls' (the others gave theirs, and the tables that decide it may not grow)
        solver.unseen_defaults = lambda: solver.handed_out_defaults(recorder.outside_arguments)  # type: ignore[method-assign]
        # a decoration undecided at the first fixed point stays so: its decorator node is an
        # existing node, which the continuation gives no value (and the decision was taken)
        solver.undecided_decorations = lambda: False  # type: ignore[method-assign]
        try:
            solver.solved(lambda: _extend(solver, file, old, new))
        finally:
            del solver.add, solver.watch, solver.edge, solver.call, solver.record, solver.unseen_defaults, solver.undecided_decorations
        if bounded(solver):
            return "the extended solve hit its bounds"
        grown = [name for name in _NOT_GROWING if mass(getattr(solver, name)) != sizes[name]]
        if grown or mass(solver.graph.implicit_calls) != implicit:
            return f"an added fact changes what the fixed point decides ({', '.join(grown) or 'implicit calls'})"
        # a class to tell apart is a patched one made at a second site (told_apart scans every call)
        made = {(obj[1], obj[2]) for _, obj in journal.calls if obj[0] == "C"}
        if (len(solver.patched) > patched_classes or made & solver.patched) and not solver.told_apart() <= solver.tagged:
            return "an added fact makes a class whose instances a full solve tells apart (instance_methods.py)"
        work = self.work + sum(delivered(solver.values[n]) for n in watched if n < existing) + _work_bound(solver, existing)
        if work > WORK_BUDGET:
            return "a full solve might reach the work budget"
        self.work = work
        journal.sound = not recorder.elsewhere  # an old site's edges are not noted
        answer = patched(solver, self.graph, recorder)
        if answer is None:
            answer, self._copied = solver.finish(), None
        elif self._copied is not None:
            self._copied.setdefault(file, []).extend(key for key in recorder.keys if key in answer.copies)
        self.graph = answer
        return answer


def _extend(solver: Solver, file: int, old: LinkedModule, new: LinkedModule) -> CallGraph:
    flow = new.facts.flow
    solver.start(file, flow.assigns[len(old.facts.flow.assigns):], islice(enumerate(flow.calls), len(old.facts.flow.calls), None))
    solver.settle()
    return solver.graph


def _guarded_add(solver: Solver, existing: int) -> Callable[[int, Iterable[Obj]], None]:
    late = solver.late if solver.late is not None else set()

    def add(node: int, objects: Iterable[Obj]) -> None:
        if node < existing:
            held = solver.values[node]
            objects = set(solver.typed_values(objects) if node in solver.typed else objects)
            objects = {o for o in objects if not collapsible(o)} if OUTSIDE_ANY in held else objects
            if node in late or not objects <= held or node in solver.saturated:
                raise _Touched
            return
        ValueGraph.add(solver, node, objects)

    return add


def bounded(solved: Solver | CallGraph) -> bool:
    """Whether the solve hit a bound that makes its answer hang on the order the values came in:
    stopped, a set saturated (collapsed outside names do not: ``value_graph.OUTSIDE_ANY``)."""
    if isinstance(solved, CallGraph):
        return solved.stopped is not None or solved.saturated > 0
    return solved.stopped or bool(solved.saturated)


def _work_bound(solver: Solver, start: int) -> int:
    """The most steps a full solve spends on the nodes from ``start`` on (module docstring)."""
    values, watchers = solver.values, solver.watchers
    return sum(delivered(values[n]) * (1 + len(watchers[n])) for n in range(start, len(values)))
