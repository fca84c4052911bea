"""The solved call graph, kept under the fingerprints of what the solve reads: a run whose files'
assignment facts did not change does not solve again.

The solve (``valueflow.py``) reads, per file, its module name, whether it is a package, its flow
facts (``FlowFacts.solver_digest``: lines and callee texts left out, so code that only moves or
changes what no value follows keeps its digest), its entries' targets and its host calls; and
the framework dispatch. Their hash, in link order, is the key. Solved graphs are kept in memory (a long-lived
caller such as ``graphlint server`` solves only when an edit changes what flows where) and beside
the facts, as a JSON table of the facts cache (``graphlint check`` with every file cached reads
the graph instead of solving it). The facts cache's directory is named by the checker's
fingerprint, which hashes the solver's sources too: a changed solver never reads an old graph.

A graph read from the cache comes without the solver that ``incremental_solve.py`` extends, so
the first edit that changes what flows would solve in full (24 s on transformers' ``models/``):
``graphlint server`` has the project solved ahead on another thread once its diagnostics are
out (``SolvedGraphs.solve_ahead``), and keeps that solver if the project is still the one it
solved when it ends; an edit that needs a solve before then waits for it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from graphlint.checks.addition import adds_to
from graphlint.checks.cache import FactsCache
from graphlint.checks.collector import collector_paused
from graphlint.checks.facts import FileFacts
from graphlint.checks.value_graph import CallGraph, FunctionKey, LinkedModule, Target
from graphlint.checks.incremental_solve import LiveSolve, bounded
from graphlint.checks.valueflow import solve

log = logging.getLogger(__name__)

_KEPT_IN_MEMORY = 2  # the graph before an edit and after it: an undo solves nothing

_Settings = tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]], bool]  # dispatch, not dispatched, preview


def solve_key(
    files: Sequence[LinkedModule],
    dispatch: Mapping[str, tuple[str, ...]],
    not_dispatched: Mapping[str, tuple[str, ...]],
    preview: bool = False,
    part: Callable[[LinkedModule], bytes] | None = None,
) -> str:
    """``part``: each file's share of the key (``file_key_part``), where a caller keeps them."""
    digest = hashlib.sha256(json.dumps([sorted(dispatch.items()), sorted(not_dispatched.items()), preview]).encode())
    part = part or file_key_part
    for linked in files:
        digest.update(part(linked))
    return digest.hexdigest()


def file_key_part(linked: LinkedModule) -> bytes:
    """One file's share of ``solve_key``: what the solve reads of it."""
    flow = linked.facts.flow
    targets = [entry.targets for entry in linked.facts.entries]
    # host_calls too: ``device="cpu"`` and ``device="npu"`` give the same flow facts
    return json.dumps([linked.module, linked.is_package, flow.digest or flow.solver_digest(), targets,
                       sorted(linked.facts.host_calls)]).encode()


class SolvedGraphs:
    """Where ``Project`` gets its call graph: solved, or kept from a solve of the same inputs."""

    def __init__(self, cache: FactsCache | None = None, incremental: bool = False) -> None:
        """``incremental``: keep the last solver, and extend it where an edit only adds
        (``incremental_solve.py``): for a long-lived caller, at the cost of its memory."""
        self.cache = cache
        self.incremental = incremental
        self._live: LiveSolve | None = None
        # Whether a graph solved now is written to the cache: not for unsaved editor text, which
        # need not outlive the session (``session.py``).
        self.write = True
        self._memory: OrderedDict[str, CallGraph] = OrderedDict()
        self._last: list[LinkedModule] | None = None  # the project of the last graph given
        # Each file's part of the last key, by its facts (never changed once made) and name: an
        # edit encodes only the edited file's. The facts are held, so that no other takes their id.
        self._parts: dict[tuple[int, str, bool], tuple[FileFacts, bytes]] = {}
        self._last_key = ""  # its ``solve_key``
        self._last_graph: CallGraph | None = None
        self._last_settings: _Settings = ({}, {}, False)
        self._ahead: _SolveAhead | None = None  # the last project's solve under way on another thread

    def graph(
        self,
        files: Sequence[LinkedModule],
        dispatch: Mapping[str, tuple[str, ...]],
        not_dispatched: Mapping[str, tuple[str, ...]] | None = None,
        preview: bool = False,
    ) -> CallGraph:
        not_dispatched = not_dispatched or {}
        key = solve_key(files, dispatch, not_dispatched, preview, self._kept_part())
        graph = self._memory.get(key)
        if graph is None:
            # One table per set of modules: a project's table is replaced when its facts change,
            # not added to.
            table = "graph-" + hashlib.sha256("\n".join(f.module for f in files).encode()).hexdigest()[:16]
            graph = self._read(table, key)
            if graph is None:
                graph = self._solve(list(files), dict(dispatch), dict(not_dispatched), preview)
                if self.cache is not None and self.write:
                    self.cache.put_table(table, {"key": key, "graph": graph_to_json(graph)})
                    self.cache.put_table(f"{table}-key", {"key": key})
            self._memory[key] = graph
        self._last, self._last_key, self._last_graph = list(files), key, graph
        self._last_settings = (dict(dispatch), dict(not_dispatched), preview)
        self._memory.move_to_end(key)
        while len(self._memory) > _KEPT_IN_MEMORY:
            self._memory.popitem(last=False)
        return graph

    def _kept_part(self) -> Callable[[LinkedModule], bytes]:
        """``file_key_part``, from the last key's parts where the file's facts and name are the
        same; the parts kept are then this key's only."""
        kept, self._parts = self._parts, {}

        def part(linked: LinkedModule) -> bytes:
            name = (id(linked.facts), linked.module, linked.is_package)
            found = kept.get(name)
            if found is None:
                found = (linked.facts, file_key_part(linked))
            self._parts[name] = found
            return found[1]

        return part

    def _solve(
        self,
        files: list[LinkedModule],
        dispatch: dict[str, tuple[str, ...]],
        not_dispatched: dict[str, tuple[str, ...]],
        preview: bool,
    ) -> CallGraph:
        if not self.incremental:
            return solve(files, dispatch, not_dispatched, preview)
        if self._ahead is not None:  # it has solved part of what a full solve would: waited for
            self.take_solved_ahead(wait=True)
        if self._live is not None:
            started = time.process_time()
            answer = self._live.extend(files, dispatch, not_dispatched, preview)
            if not isinstance(answer, str):
                back = "; the last extension taken back first" if self._live.retracted else ""
                back += "; changed assignments re-derived" if self._live.rederived else ""
                log.info("value flow extended in place (%.2f CPU-s%s)", time.process_time() - started, back)
                return answer
            log.info("value flow solved in full: %s", answer)
            self._live.release()
        started = time.process_time()
        if self._live is None and self._last is not None and adds_to(self._last, files):
            # no solver kept (the last graph came from the cache) and the edit adds: the project
            # before it solved and kept, then extended, so that what it added can be taken back
            # at the next edit (``retraction.py``: typing on a new line)
            live = LiveSolve(self._last, dispatch, not_dispatched, preview)
            answer = live.extend(files, dispatch, not_dispatched, preview)
            if not isinstance(answer, str):
                self._live = live
                log.info("value flow solved in full before the edit, then extended (%.2f CPU-s)", time.process_time() - started)
                return answer
            log.info("value flow solved in full: %s", answer)
            live.release()
        self._live = LiveSolve(files, dispatch, not_dispatched, preview)
        graph = self._live.graph
        bounds = f"; stopped after {graph.stopped:,} steps" if graph.stopped is not None else ""
        bounds += f"; {graph.saturated:,} set(s) saturated" if graph.saturated else ""
        bounds += f"; outside names collapsed {graph.collapsed:,} time(s)" if graph.collapsed else ""
        log.info("value flow solved in full (%.2f CPU-s%s)", time.process_time() - started, bounds)
        return self._live.graph

    def solve_ahead(self, done: Callable[[], None]) -> None:
        """Where no solver is kept (the last graph was read from the cache), solve the last
        project on another thread, for ``_solve`` to extend at the next edit that changes what
        flows; ``done`` is called on that thread when it ends. The solve reads a snapshot (the
        linked modules given, which nothing changes) and is taken by ``take_solved_ahead``, on
        the caller's thread, only for the project it solved (``solve_key``)."""
        if not self.incremental or self._live is not None or self._ahead is not None or self._last_graph is None:
            return
        if bounded(self._last_graph):  # a bounded solve is not kept (``LiveSolve``)
            return
        self._ahead = _SolveAhead(self._last_key, list(self._last), self._last_settings, done)

    def take_solved_ahead(self, wait: bool = False) -> None:
        """Keep the solve made ahead if it is of the last project given (an edit since that
        changed the solve's inputs makes it stale: dropped); ``wait``: for it to end."""
        ahead = self._ahead
        if ahead is None or (not wait and not ahead.ended.is_set()):
            return
        started = time.perf_counter()
        ahead.thread.join()
        self._ahead = None
        waited = f"; the edit waited {time.perf_counter() - started:.2f} s for it" if wait else ""
        if ahead.live is None:
            log.warning("value flow solved ahead failed: %s%s", ahead.failure, waited)
        elif ahead.key != self._last_key:
            ahead.live.release()
            log.info("value flow solved ahead dropped: the project changed while it was solved%s", waited)
        else:
            self._live = ahead.live
            log.info("value flow solved ahead, kept for the next edit (%.2f CPU-s on another thread%s)", ahead.cpu, waited)

    def _read(self, table: str, key: str) -> CallGraph | None:
        if self.cache is None or self.cache.get_table(f"{table}-key") != {"key": key}:
            return None  # (the small table says so without reading the graph)
        data = self.cache.get_table(table)
        if not isinstance(data, dict) or data.get("key") != key:
            return None
        try:
            return graph_from_json(data["graph"])
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            return None  # unreadable: solve again


class _SolveAhead:
    """A ``LiveSolve`` of a project made on a thread of its own."""

    def __init__(
        self,
        key: str,
        files: list[LinkedModule],
        settings: _Settings,
        done: Callable[[], None],
    ) -> None:
        self.key = key  # the ``solve_key`` of ``files``
        self.live: LiveSolve | None = None
        self.failure = ""  # why ``live`` is None once the thread ended
        self.cpu = 0.0  # the thread's CPU seconds
        self.ended = threading.Event()  # set before ``done`` is called (the thread is alive still)
        self.thread = threading.Thread(target=self._solve, args=(files, settings, done), name="graphlint-solve-ahead", daemon=True)
        self.thread.start()

    def _solve(
        self,
        files: list[LinkedModule],
        settings: _Settings,
        done: Callable[[], None],
    ) -> None:
        started = time.thread_time()
        try:
            # The collector paused until ``LiveSolve`` froze what it made: its first pass after
            # the solve scanned those millions of objects, holding the interpreter lock for
            # seconds (a hover waited 4.4 s on models/)
            with collector_paused():
                self.live = LiveSolve(files, *settings)
        except Exception as exc:  # a solver bug: the next edit that changes what flows solves in full
            self.failure = f"{type(exc).__name__}: {exc}"
        finally:
            self.cpu = time.thread_time() - started
            self.ended.set()
            done()


def _target_to_json(target: Target) -> Any:
    return [target.file, target.qualname] if isinstance(target, FunctionKey) else target


def graph_to_json(graph: CallGraph) -> dict[str, Any]:
    return {
        "callees": [[f, o, [[_target_to_json(t), kind] for t, kind in targets.items()]] for (f, o), targets in graph.callees.items()],
        "resolved": [list(key) for key in graph.resolved],
        "implicit_calls": [[f, scope, [_target_to_json(t) for t in targets]] for (f, scope), targets in graph.implicit_calls.items()],
        "entry_targets": [[f, i, [_target_to_json(t) for t in targets]] for (f, i), targets in graph.entry_targets.items()],
        "entry_outside": [[f, i, names] for (f, i), names in graph.entry_outside.items()],
        "copies": [[list(site), [[_target_to_json(t), copy, kind] for (t, copy), kind in targets.items()]] for site, targets in graph.copies.items()],
        "stopped": graph.stopped,
        "host_receivers": [list(key) for key in sorted(graph.host_receivers)],
        "instance_calls": [list(key) for key in sorted(graph.instance_calls)],
        "saturated": graph.saturated,
        "collapsed": graph.collapsed,
        "unseen": [list(key) for key in sorted(graph.unseen)],
        "wrapper_calls": [[f, o, sorted(list(c) for c in compiles)] for (f, o), compiles in graph.wrapper_calls.items()],
        "wrapper_only": [list(key) for key in sorted(graph.wrapper_only)],
        "escaped_wrappers": [list(key) for key in sorted(graph.escaped_wrappers)],
    }


def graph_from_json(data: dict[str, Any]) -> CallGraph:
    function_keys: dict[tuple[int, str], FunctionKey] = {}  # one object per function, as the solve makes

    def target(item: Any) -> Target:
        if isinstance(item, str):
            return item
        key = (int(item[0]), str(item[1]))
        found = function_keys.get(key)
        if found is None:
            found = function_keys[key] = FunctionKey(*key)
        return found

    entry_targets = {(f, i): [target(t) for t in targets] for f, i, targets in data["entry_targets"]}
    return CallGraph(
        callees={(f, o): {target(t): str(kind) for t, kind in targets} for f, o, targets in data["callees"]},
        resolved={(f, o) for f, o in data["resolved"]},
        implicit_calls={(f, scope): {target(t) for t in targets} for f, scope, targets in data["implicit_calls"]},
        entry_targets=entry_targets,  # type: ignore[arg-type]
        entry_outside={(f, i): list(names) for f, i, names in data["entry_outside"]},
        copies={tuple(site): {(target(t), str(copy)): str(kind) for t, copy, kind in targets} for site, targets in data["copies"]},
        stopped=data["stopped"],
        host_receivers={(f, o) for f, o in data["host_receivers"]},
        instance_calls={(f, o) for f, o in data["instance_calls"]},
        saturated=int(data["saturated"]),
        collapsed=int(data["collapsed"]),
        unseen={(int(f), str(q), str(c)) for f, q, c in data["unseen"]},
        wrapper_calls={(f, o): {(cf, co) for cf, co in compiles} for f, o, compiles in data["wrapper_calls"]},
        wrapper_only={(f, o) for f, o in data["wrapper_only"]},
        escaped_wrappers={(f, o) for f, o in data["escaped_wrappers"]},
    )
