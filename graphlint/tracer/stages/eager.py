"""Stage 1: run the target uncompiled. Its outputs are the reference for every later stage;
an exception here is a bug in the model itself (layer ``model``), not in graph mode. A first
call far slower than the next ones is noted: on an NPU that is operators being JIT-compiled on
first use (pytorch#1428), and later timings are the ones to judge."""

from __future__ import annotations

import time

from graphlint.tracer.calls import call_each_input
from graphlint.tracer.classify.exception import finding_of_exception
from graphlint.tracer.findings import Finding, StageResult
from graphlint.tracer.stages.base import Stage, StageContext


SLOW_FIRST_CALL_SECONDS = 2.0  # below this a slow first call is not worth a note
SLOW_FIRST_CALL_FACTOR = 10.0  # … nor when it is less than this many times the slowest later call


class EagerStage(Stage):
    name = "eager"
    layer = "model"

    def run(self, ctx: StageContext) -> StageResult:
        from graphlint.tracer.first_call import module_state

        start = time.perf_counter()
        seconds: list[float] = []
        before = module_state(ctx.target)
        try:
            ctx.eager_outputs = call_each_input(ctx.target.fn, ctx.target, ctx.options.train, seconds)
        except Exception as exc:
            finding = finding_of_exception(
                exc, stage=self.name, layer=self.layer, user_files=ctx.target.user_files, default_kind="model-error"
            )
            return StageResult(
                self.name, "failed", seconds=time.perf_counter() - start, reason=finding.message, findings=[finding]
            )
        changed = self._first_call_state(ctx, before, module_state(ctx.target))
        findings = [f for f in [self._slow_first_call(seconds), changed] if f is not None]
        return StageResult(self.name, "passed", seconds=time.perf_counter() - start, findings=findings)

    def _first_call_state(self, ctx: StageContext, before: dict, after: dict) -> Finding | None:
        """A note when calling the target changed it: the stages after this one must see it as
        a first call would (they do, on a copy taken before, where one could be taken)."""
        from graphlint.tracer.first_call import state_changes

        changes = state_changes(before, after)
        if not changes:
            return None
        shown = "; ".join(changes[:5]) + (f"; and {len(changes) - 5} more" if len(changes) > 5 else "")
        if ctx.pristine is not None:
            tail = "the later stages ran on a copy taken before it, as a user's first compiled call finds the model"
        else:
            tail = "the later stages saw the changed target (its callable is not a module, so it could not be copied)"
        return self.finding(
            "first-call-state",
            f"the first call changed the target's state ({shown}); {tail}",
            severity="info" if ctx.pristine is not None else "warning",
            details={"changes": changes, "isolated": ctx.pristine is not None},
        )

    def _slow_first_call(self, seconds: list[float]) -> Finding | None:
        if len(seconds) < 2:
            return None
        first, later = seconds[0], max(seconds[1:])
        if first < SLOW_FIRST_CALL_SECONDS or first < SLOW_FIRST_CALL_FACTOR * later:
            return None
        return self.finding(
            "slow-first-run",
            f"the first call took {first:.1f} s, later calls at most {later:.2f} s: judge speed from later steps",
            severity="info",
            details={"first_seconds": round(first, 3), "later_max_seconds": round(later, 3)},
        )


STAGE = EagerStage
