"""Stage 3: AOTAutograd with eager compilers (``aot_eager``): functionalization, decompositions,
and the backward graph under ``--train``. A failure here that dynamo did not have is in the
``aot`` layer. The functionalized graphs go to later stages (``ctx.shared["aot_graphs"]``) and
their copy counts into ``artifacts["copies_aten"]``."""

from __future__ import annotations

import time
from typing import Any

import torch

from graphlint.tracer.accuracy import compare_outputs
from graphlint.tracer.calls import call_each_input, eager_outputs
from graphlint.tracer.classify.exception import finding_of_exception
from graphlint.tracer.copies.aten import count_aten_copies
from graphlint.tracer.dump import dump_graphs
from graphlint.tracer.findings import Finding, StageResult
from graphlint.tracer.recording import GraphRecorder
from graphlint.tracer.stages.base import Stage, StageContext


class AotStage(Stage):
    name = "aot"
    layer = "aot"

    def run(self, ctx: StageContext) -> StageResult:
        start = time.perf_counter()
        reference = eager_outputs(ctx)
        recorder = GraphRecorder()
        findings: list[Finding] = []
        outputs: list[Any] | None = None
        torch._dynamo.reset()
        try:
            compiled = torch.compile(ctx.target.fn, backend=recorder.aot_eager)
            outputs = call_each_input(compiled, ctx.target, ctx.options.train)
        except Exception as exc:
            findings.append(
                finding_of_exception(
                    exc, stage=self.name, layer=self.layer, user_files=ctx.target.user_files,
                    default_kind="compile-error",
                )
            )
        aot_graphs = [g for g in recorder.graphs if g.kind != "dynamo"]
        ctx.shared["aot_graphs"] = aot_graphs
        if outputs is not None and reference is not None:
            mismatch = compare_outputs(self.name, reference, outputs)
            if mismatch is not None:
                findings.append(mismatch)
        errors = [f for f in findings if f.severity == "error"]
        return StageResult(
            self.name,
            "failed" if errors else "passed",
            seconds=time.perf_counter() - start,
            reason=errors[0].message.splitlines()[0] if errors else None,
            graphs=len(aot_graphs),
            findings=findings,
            artifacts={
                "copies_aten": count_aten_copies(aot_graphs, ctx.target.user_files),
                "graphs_dumped": dump_graphs(ctx, "aot", aot_graphs),
            },
        )


STAGE = AotStage
