"""Classifiers on real exceptions and real dynamo reports, produced here by compiling small
functions (each test says how)."""

from __future__ import annotations

import torch

from graphlint.tracer.classify.exception import finding_of_exception
from graphlint.tracer.classify.graph_break import graph_break_code, graph_break_of_log, graph_break_registry
from graphlint.tracer.classify.recompile import limit_hit_of_log, recompile_of_log
from graphlint.tracer.classify.unwrap import real_cause
from graphlint.tracer.dynamo_reports import collect_dynamo_reports

THIS_FILE = {__file__}


def failing_backend(gm, example_inputs):
    raise NotImplementedError("no converter for aten.cumsum")  # the line a backend fails on


def test_backend_compiler_failed_is_unwrapped_to_the_real_cause() -> None:
    # produced by: torch.compile with a backend that raises NotImplementedError
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: torch.cumsum(x, 0), backend=failing_backend)
    try:
        compiled(torch.ones(3))
    except Exception as exc:  # BackendCompilerFailed
        wrapped = exc
    assert type(wrapped).__name__ == "BackendCompilerFailed"
    assert isinstance(real_cause(wrapped), NotImplementedError)
    finding = finding_of_exception(
        wrapped, stage="aot", layer="aot", user_files=THIS_FILE, default_kind="compile-error"
    )
    assert finding.kind == "not-implemented" and finding.code == "GT008"
    assert finding.details["exception"] == "NotImplementedError"
    assert finding.details["wrapped_in"] == "BackendCompilerFailed"
    assert finding.file == __file__ and finding.line == failing_backend.__code__.co_firstlineno + 1


def test_fullgraph_unsupported_keeps_its_graph_break_code() -> None:
    # produced by: fullgraph=True on a data-dependent branch raises dynamo's Unsupported
    def branchy(x):
        if x.sum() > 0:
            return x + 1
        return x

    torch._dynamo.reset()
    try:
        torch.compile(branchy, backend="eager", fullgraph=True)(torch.ones(2))
    except Exception as exc:
        raised = exc
    finding = finding_of_exception(raised, stage="dynamo", layer="dynamo", user_files=THIS_FILE, default_kind="compile-error")
    assert finding.kind == "graph-break" and finding.code == "GB0170"
    assert finding.line == branchy.__code__.co_firstlineno + 1


def test_graph_break_and_recompile_reports_from_dynamo_logs() -> None:
    # produced by: default torch.compile; str() of a size made dynamic by a second batch size
    def tagged(x):
        n = x.shape[0]
        return x * len(str(n))

    torch._dynamo.reset()
    compiled = torch.compile(tagged, backend="eager")
    with collect_dynamo_reports() as reports:
        compiled(torch.ones(2))
        compiled(torch.ones(3))
    assert reports.graph_breaks and reports.recompiles
    gb = graph_break_of_log(reports.graph_breaks[0], THIS_FILE)
    assert gb.code == "GB0059" and gb.file == __file__ and gb.line == tagged.__code__.co_firstlineno + 2
    assert gb.reason.startswith("Failed to trace builtin operator")
    recompile = recompile_of_log(reports.recompiles[0], THIS_FILE)
    assert recompile is not None and recompile.function == "tagged"
    assert "size mismatch" in recompile.guard and recompile.file == __file__


def test_recompile_limit_hit_is_read_from_dynamo_warning() -> None:
    # produced by: a loop over range(n) with a new n each call, past recompile_limit (8)
    def steps(x, n):
        for _ in range(n):
            x = x * 2
        return x

    torch._dynamo.reset()
    compiled = torch.compile(steps, backend="eager")
    with collect_dynamo_reports() as reports:
        for n in range(1, 11):
            compiled(torch.ones(1), n)
    assert len(reports.limit_hits) == 1
    hit = limit_hit_of_log(reports.limit_hits[0])
    assert hit is not None and hit.limit == 8 and hit.function == "steps" and hit.guard == "n == 8"
    assert graph_break_code("", "Dynamo recompile limit exceeded") == "GB0039"


def test_registry_is_read_from_the_installed_torch() -> None:
    registry = graph_break_registry()
    assert registry["Data-dependent branching"] == "GB0170"
    assert graph_break_code("see https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html") == "GB0059"
    assert graph_break_code("nothing known") is None
