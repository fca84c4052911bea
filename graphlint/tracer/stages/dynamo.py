"""Stage 2: dynamo alone. ``torch.compile`` with a recording ``eager`` backend, default settings
(not fullgraph), called once per example input: every graph, every graph break (GBxxxx code,
reason, user line; one finding per distinct code and line, with a count), every recompile with
its failing guard, and recompile-limit hits. Failed on a graph break, a compile error or a limit
hit; recompiles below the limit are warnings."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from graphlint.tracer.calls import eager_outputs
from graphlint.tracer.classify.codes import trace_code
from graphlint.tracer.classify.graph_break import classify_graph_break, graph_break_of_log
from graphlint.tracer.classify.recompile import limit_hit_of_log, recompile_of_log
from graphlint.tracer.dump import dump_decompiled, dump_graphs, dump_target
from graphlint.tracer.dynamo_reports import DynamoReports, collect_dynamo_reports
from graphlint.tracer.findings import Finding, StageResult
from graphlint.tracer.recording import GraphRecorder
from graphlint.tracer.stages.base import Stage, StageContext


class DynamoStage(Stage):
    name = "dynamo"
    layer = "dynamo"

    def run(self, ctx: StageContext) -> StageResult:
        from graphlint.tracer.one_compile import OneCompile

        start = time.perf_counter()
        reference = eager_outputs(ctx)
        one = OneCompile.start(ctx)
        if one is not None:
            recorder = one.dynamo_graphs
            with collect_dynamo_reports() as reports:
                outputs, findings = one.run(self.name, lambda backend: self.call_compiled(ctx, backend))
            if findings:  # the run stopped: the later stages did not get all their graphs
                one.give_up("aot", "torchair")
        if one is None or not one.usable[self.name]:
            recorder = GraphRecorder()
            with collect_dynamo_reports() as reports:
                outputs, findings = self.call_compiled(ctx, recorder.eager)
        decompiled = dump_decompiled(ctx, ctx.target.fn)
        dump_target(ctx)
        ctx.shared["dynamo_graphs"] = recorder.graphs
        breaks = self._graph_breaks(reports, ctx.target.user_files)
        recompiles, recompile_count = self._recompiles(reports, ctx.target.user_files)
        return self.result(
            start,
            findings + breaks + recompiles + self.accuracy(ctx, reference, outputs),
            graphs=len(recorder.of_kind("dynamo")),
            graph_breaks=sum(f.count for f in breaks),
            recompiles=recompile_count,
            artifacts={
                "graphs_dumped": dump_graphs(ctx, "dynamo", recorder.of_kind("dynamo")),
                "decompiled": decompiled,
            },
        )

    def _graph_breaks(self, reports: DynamoReports, user_files: set[str]) -> list[Finding]:
        """One finding per distinct (code, file, line), counting its occurrences."""
        by_site: dict[tuple[Any, ...], Finding] = {}
        for message in reports.graph_breaks:
            gb = graph_break_of_log(message, user_files)
            key = (gb.code, gb.file, gb.line)
            if key in by_site:
                by_site[key].count += 1
                continue
            by_site[key] = self.finding(
                "graph-break", f"graph break: {gb.reason}", code=gb.code, file=gb.file, line=gb.line,
                details={"reason": message.split("User code traceback:", 1)[0].strip()[-3000:], "meaning": gb.meaning},
            )
        return list(by_site.values())

    def _recompiles(self, reports: DynamoReports, user_files: set[str]) -> tuple[list[Finding], int]:
        """A warning per recompiled function and line, with the first failing guard; an error per
        recompile-limit hit, at the line of the guard that kept failing."""
        parsed = [r for r in (recompile_of_log(m, user_files) for m in reports.recompiles) if r is not None]
        counts = Counter((r.function, r.file, r.line) for r in parsed)
        findings = []
        for (function, file, line), count in counts.items():
            first = next(r for r in parsed if (r.function, r.file, r.line) == (function, file, line))
            findings.append(
                self.finding(
                    "recompile", f"{function} recompiled {count} time(s); first failing guard: {first.guard}",
                    code=trace_code("recompile"), file=file, line=line, severity="warning", count=count,
                    details={"guard": first.guard, "function": function},
                )
            )
        for message in reports.limit_hits:
            hit = limit_hit_of_log(message)
            if hit is None:
                continue
            last = next((r for r in reversed(parsed) if r.function == hit.function), None)
            code, meaning = classify_graph_break(message)
            findings.append(
                self.finding(
                    "recompile-limit",
                    f"{hit.function} hit dynamo's {hit.limit_kind} ({hit.limit}) and now runs eagerly; "
                    f"the guard that kept failing: {hit.guard}",
                    code=code,
                    file=last.file if last else hit.function_file,
                    line=last.line if last else hit.function_line,
                    details={"guard": hit.guard, "function": hit.function, "limit": hit.limit, "meaning": meaning},
                )
            )
        return findings, len(parsed)


STAGE = DynamoStage
