"""Stage 3: AOTAutograd with eager compilers (``aot_eager``): functionalization, decompositions,
and the backward graph under ``--train``. A failure here that dynamo did not have is in the
``aot`` layer. The functionalized graphs go to later stages (``ctx.shared["aot_graphs"]``) and
their copy counts into ``artifacts["copies_aten"]``."""

from __future__ import annotations

import time

from graphlint.tracer.calls import eager_outputs
from graphlint.tracer.copies.aten import count_aten_copies
from graphlint.tracer.dump import dump_graphs
from graphlint.tracer.findings import StageResult
from graphlint.tracer.recording import GraphRecorder
from graphlint.tracer.stages.base import Stage, StageContext


class AotStage(Stage):
    name = "aot"
    layer = "aot"

    def run(self, ctx: StageContext) -> StageResult:
        from graphlint.tracer.one_compile import shared

        start = time.perf_counter()
        reference = eager_outputs(ctx)
        one = shared(ctx, self.name)
        if one is not None:
            recorder = one.aot_graphs
            outputs, findings = one.run(self.name, lambda backend: self.call_compiled(ctx, backend, fresh=False))
        if one is None or not one.usable[self.name]:
            recorder = GraphRecorder()
            outputs, findings = self.call_compiled(ctx, recorder.aot_eager)
        aot_graphs = [g for g in recorder.graphs if g.kind != "dynamo"]
        ctx.shared["aot_graphs"] = aot_graphs
        return self.result(
            start,
            findings + self.accuracy(ctx, reference, outputs),
            graphs=len(aot_graphs),
            artifacts={
                "copies_aten": count_aten_copies(aot_graphs, ctx.target.user_files),
                "graphs_dumped": dump_graphs(ctx, "aot", aot_graphs),
            },
        )


STAGE = AotStage
