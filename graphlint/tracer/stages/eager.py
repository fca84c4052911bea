"""Stage 1: run the target uncompiled. Its outputs are the reference for every later stage;
an exception here is a bug in the model itself (layer ``model``), not in graph mode."""

from __future__ import annotations

import time

from graphlint.tracer.calls import call_each_input
from graphlint.tracer.classify.exception import finding_of_exception
from graphlint.tracer.findings import StageResult
from graphlint.tracer.stages.base import Stage, StageContext


class EagerStage(Stage):
    name = "eager"
    layer = "model"

    def run(self, ctx: StageContext) -> StageResult:
        start = time.perf_counter()
        try:
            ctx.eager_outputs = call_each_input(ctx.target.fn, ctx.target, ctx.options.train)
        except Exception as exc:
            finding = finding_of_exception(
                exc, stage=self.name, layer=self.layer, user_files=ctx.target.user_files, default_kind="model-error"
            )
            return StageResult(
                self.name, "failed", seconds=time.perf_counter() - start, reason=finding.message, findings=[finding]
            )
        return StageResult(self.name, "passed", seconds=time.perf_counter() - start)


STAGE = EagerStage
