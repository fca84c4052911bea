"""One ``torch.compile`` feeding the dynamo, aot and torchair stages (issue 19).

Each of those stages used to compile the target itself. When one worker runs all three with
torchair offline, the dynamo stage compiles the target once with ``OneCompile.backend``: dynamo
calls it with each graph inside its own compile context (fake mode, shape environment, tracing
context: where ``aot_eager`` and torchair's backend run when they are dynamo's backend). It keeps
the graph for the dynamo stage, runs the aot stage's recording ``aot_eager`` on it and torchair's
backend under the translation watcher, and returns a switch. The aot and torchair stages then
call the target on their own fresh copies without resetting dynamo: its cache is hit, and the
switch runs that stage's own compiled graph, so each stage's outputs, accuracy check and
(``--train``) lazily compiled backward graphs are its own.

Where that would not give what the stage alone gives, the stage compiles alone, as before:
- a compile while the aot or torchair stage runs (the cache missed: automatic dynamic shapes,
  a guard on something the stage changed): that stage and the ones after it;
- ``aot_eager`` raised: the aot stage (its exception, traceback and wrapper are then today's);
- the dynamo stage's run raised: the aot and torchair stages;
- AOT or torchair added guards to the shape environment: all three (the dynamo stage's guards,
  and so its recompiles, would be theirs too; compiling it alone resets dynamo's cache).
torchair is imported before dynamo traces and hidden whenever it is not translating or
running (``torchair/hiding.py``). Each backend call is announced to the supervisor as a phase of
its stage (``StageContext.announce``), so a crash or hang inside it is that stage's finding;
the supervisor then runs the stages that had not reported in a fresh worker, each alone. The
time of each call is moved from the dynamo stage's row to its own stage's row.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import torch

from graphlint.tracer.recording import GraphRecorder
from graphlint.tracer.stages.base import StageContext

STAGES = ("dynamo", "aot", "torchair")
KEY = "one_compile"  # in ``StageContext.shared``


class OneCompile:
    def __init__(self, ctx: StageContext, session: ExitStack, torchair: Any, hiding: Any) -> None:
        from graphlint.tracer.torchair.runner import Translator

        self._ctx = ctx
        self._session = session
        self.hiding = hiding
        self.translator = Translator(torchair, ctx.target.user_files)  # before hiding: it patches torch
        self.mode = "dynamo"  # the stage whose run is calling the target now
        self.usable = dict.fromkeys(STAGES, True)  # the stages whose results this compile gives
        self.dynamo_graphs = GraphRecorder()
        self.aot_graphs = GraphRecorder()
        # One object for every stage's torch.compile: dynamo's cache entries check the backend.
        self.backend = self._compile

    @classmethod
    def start(cls, ctx: StageContext) -> OneCompile | None:
        """The compile shared by this worker's dynamo, aot and torchair stages, torchair imported
        (and hidden); None where the stages compile alone: not all three run in this worker,
        torchair runs for real or not at all, or its offline import fails (the torchair stage
        then predicts from its registry, as before)."""
        from graphlint.tracer.stages.torchair import runs_for_real
        from graphlint.tracer.torchair.hiding import TorchairHiding
        from graphlint.tracer.torchair.locate import locate_torch_npu
        from graphlint.tracer.torchair.offline import offline_torchair

        # torchair's graph-breaking patch of dynamo (BREAK_GRAPH_OP_LIST) changes dynamo's own
        # classes, which hiding does not undo: the stages compile alone then.
        if not ctx.shares_compile or os.environ.get("BREAK_GRAPH_OP_LIST"):
            return None
        try:
            source = locate_torch_npu(ctx.options.torchair)
        except FileNotFoundError:
            return None
        if source is None or runs_for_real(source):
            return None
        session = ExitStack()
        with _phase(ctx, "torchair"):  # its import is the torchair stage's work
            try:
                hiding = TorchairHiding()
                torchair = session.enter_context(offline_torchair(source))
                one = cls(ctx, session, torchair, hiding)
            except Exception:  # noqa: BLE001 - the torchair stage reports it when it runs alone
                session.close()
                return None
            session.callback(hiding.show)  # before offline_torchair undoes the import
            hiding.hide()
        ctx.shared[KEY] = one
        return one

    def close(self) -> None:
        """torchair's import undone (idempotent)."""
        self._session.close()

    def _compile(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        if self.mode != "dynamo":  # the cache missed while a later stage ran
            self.give_up(*STAGES[STAGES.index(self.mode) :])
            return gm.forward
        compiled = {"dynamo": self.dynamo_graphs.eager(gm, example_inputs)}
        guards = _guard_count()
        if self.usable["aot"]:
            with _phase(self._ctx, "aot"):
                try:
                    compiled["aot"] = self.aot_graphs.aot_eager(gm, example_inputs)
                except Exception:  # noqa: BLE001 - the aot stage compiles alone and reports it
                    self.give_up("aot")
        if self.usable["torchair"]:
            with _phase(self._ctx, "torchair"), self.hiding.shown():
                compiled["torchair"] = self.translator.backend(gm, example_inputs)
        if _guard_count() != guards:
            # The dynamo stage's guards (its recompiles) would be another's: it compiles alone,
            # from a clean dynamo state, so no later stage can go through this compile's cache.
            self.give_up(*STAGES)
        return self._switch(compiled, gm.forward)

    def run(self, stage: str, call: Callable[[Callable[..., Any]], Any]) -> Any:
        """``call(backend)`` as the run of ``stage``: the dynamo stage's compiles from a clean
        dynamo state, the others' go through dynamo's cache."""
        self.mode = stage
        return call(self.backend)

    def give_up(self, *stages: str) -> None:
        """These stages compile alone."""
        for stage in stages:
            self.usable[stage] = False

    def _switch(self, compiled: dict[str, Callable[..., Any]], fallback: Callable[..., Any]) -> Callable[..., Any]:
        def switch(*args: Any) -> Any:  # called as dynamo calls a backend's result: unboxed
            return compiled.get(self.mode, fallback)(*args)

        return switch


def shared(ctx: StageContext, stage: str) -> OneCompile | None:
    """The one compile, when it gives ``stage``'s result."""
    one = ctx.shared.get(KEY)
    return one if one is not None and one.usable[stage] else None


def close(ctx: StageContext) -> None:
    """The one compile's torchair undone; the stages still to run compile alone."""
    one = ctx.shared.pop(KEY, None)
    if one is not None:
        one.close()


@contextmanager
def _phase(ctx: StageContext, stage: str) -> Iterator[None]:
    """Work of ``stage`` inside the dynamo stage's run: announced (a crash or hang in it is
    ``stage``'s), and its time moved to ``stage``'s row."""
    wall, cpu = time.perf_counter(), time.process_time()
    ctx.announce(stage)
    try:
        yield
    finally:
        ctx.announce("dynamo")
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        for name, sign in ((stage, 1), ("dynamo", -1)):
            moved = ctx.time_moved.setdefault(name, [0.0, 0.0])
            moved[0] += sign * wall
            moved[1] += sign * cpu


def _guard_count() -> int:
    """Guards of the shape environment dynamo is compiling in (0 without one)."""
    context = torch._guards.TracingContext.try_get()
    fake_mode = getattr(context, "fake_mode", None)
    return len(getattr(getattr(fake_mode, "shape_env", None), "guards", None) or ())
