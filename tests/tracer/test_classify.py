"""Classifiers on real exceptions and real dynamo reports, produced here by compiling small
functions (each test says how)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from graphlint.tracer.classify.exception import finding_of_exception
from graphlint.tracer.classify.graph_break import (
    break_meanings,
    classify_graph_break,
    graph_break_code,
    graph_break_of_log,
    graph_break_registry,
)
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
    assert gb.file == __file__ and gb.line == tagged.__code__.co_firstlineno + 2
    # GB0059 "Failed to trace builtin operator" up to torch 2.13, GB6053 in 2.14: one meaning
    assert gb.meaning == "str-on-symint" and gb.code in {"GB0059", "GB6053"}, gb
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
    assert hit is not None and hit.limit == 8 and hit.function == "steps"
    # the guard on n that kept failing: "n == 8" (torch 2.6 names the first, "L['n'] == 1")
    assert re.fullmatch(r"(n|L\['n'\]) == [18]", hit.guard), hit.guard
    assert classify_graph_break(reports.limit_hits[0]) == ("GB0039", "recompile-limit")


def test_registry_is_read_from_the_installed_torch() -> None:
    registry = graph_break_registry()
    if Path(torch._dynamo.__file__).with_name("graph_break_registry.json").exists():  # torch ≥ 2.7
        assert registry["Data-dependent branching"] == "GB0170"
    else:
        assert registry == {}
    assert graph_break_code("see https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html") == "GB0059"
    assert graph_break_code("nothing known") is None


# Reasons as torch 2.6 logs them (no registry, no link, "Reason:" in words of its own), copied
# from its graph_breaks log of samples/trace/*.py, and torch 2.6's recompile-limit warning.
TORCH_2_6_REASONS = [
    ("Data-dependent jump", "GB0170", "data-dependent-branch"),
    ("Unsupported: builtin: str [<class 'torch._dynamo.variables.tensor.SymNodeVariable'>] False", "GB0059", "str-on-symint"),
    ("torch._dynamo hit config.cache_size_limit (8)\n   function: 'forward' (m.py:15)", "GB0039", "recompile-limit"),
]


@pytest.mark.parametrize(("reason", "code", "meaning"), TORCH_2_6_REASONS)
def test_a_torch_without_registry_gets_the_same_codes_from_the_message(reason: str, code: str, meaning: str) -> None:
    assert classify_graph_break(reason) == (code, meaning)


def test_a_code_torch_names_is_kept_and_its_meaning_needs_the_reason_to_match() -> None:
    # torch 2.14's reason for str() of a SymInt, and the same code for another object
    link = "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb6053.html"
    reason = "tp_repr_impl not implemented\n  Developer debug context: {} has tp_repr slot but no tp_repr_impl override\n{}"
    assert classify_graph_break(reason.format("SymNodeVariable", link)) == ("GB6053", "str-on-symint")
    assert classify_graph_break(reason.format("UserDefinedObjectVariable", link)) == ("GB6053", None)
    assert all(m.codes and m.reason.pattern for m in break_meanings())


def test_graph_break_log_of_torch_2_6_is_read() -> None:
    # torch 2.6's graph_breaks message: "Reason:" where later torches write "Graph Break Reason:"
    message = (
        f"Graph break in user code at {__file__}:7\nReason: Data-dependent jump\n"
        f'User code traceback:\n  File "{__file__}", line 7, in forward\n    if too_large:\n'
    )
    gb = graph_break_of_log(message, THIS_FILE)
    assert (gb.code, gb.meaning, gb.reason, gb.line) == ("GB0170", "data-dependent-branch", "Data-dependent jump", 7)


def test_recompile_of_torch_2_6_is_placed_by_the_guard_source_comment() -> None:
    # torch 2.6's recompiles message: no user stack trace, only the guard's source comment,
    # its path shortened to the last parts
    message = (
        f"Recompiling function forward in {__file__}:15\n"
        "    triggered by the following guard failure(s):\n"
        "    - 0/1: L['steps'] == 2  # for _ in range(steps):  # tests/tracer/test_classify.py:16 in forward "
        "(_dynamo/variables/tensor.py:1201 in evaluate_expr)\n"
        "    - 0/0: L['steps'] == 1                                             \n"
    )
    recompile = recompile_of_log(message, THIS_FILE)
    assert recompile is not None
    assert (recompile.guard, recompile.file, recompile.line) == ("L['steps'] == 2", __file__, 16)
    # torch 2.6 may list first the guard of the first compile, which has no comment
    first_compile_first = message.replace("- 0/1: L['steps'] == 2", "- 0/9: L['steps'] == 2").replace(
        "    triggered by the following guard failure(s):\n",
        "    triggered by the following guard failure(s):\n    - 0/0: L['steps'] == 1    \n",
    )
    recompile = recompile_of_log(first_compile_first, THIS_FILE)
    assert recompile is not None and (recompile.guard, recompile.line) == ("L['steps'] == 1", 16)
    # a comment that names no user file: the recompiled function's own line
    other_file = recompile_of_log(message, {"/elsewhere/model.py"})
    assert other_file is not None and other_file.line == 15


@pytest.mark.parametrize("torch_folder", ["/" + Path(__file__).parts[1] + "/venv/lib", "/elsewhere/venv/lib"])
def test_recompile_is_placed_whatever_folder_torch_is_installed_in(torch_folder: str) -> None:
    # torch 2.6 shortens the guard comment's path by the folder it shares with torch's install;
    # when that is only "/" (a venv under /root, a model under /work), the path loses the first
    # character of its first folder as well: "ork/…/model.py"
    from torch.utils._traceback import shorten_filename

    shortened = shorten_filename(__file__, base=torch_folder)
    message = (
        f"Recompiling function forward in {__file__}:15\n"
        "    triggered by the following guard failure(s):\n"
        f"    - 0/1: L['steps'] == 2  # for _ in range(steps):  # {shortened}:16 in forward "
        "(_dynamo/variables/tensor.py:1201 in evaluate_expr)\n"
    )
    recompile = recompile_of_log(message, THIS_FILE)
    assert recompile is not None and (recompile.file, recompile.line) == (__file__, 16), shortened
    if shortened == __file__[2:]:  # a file whose path only ends in the same characters is not it
        other = recompile_of_log(message, {"/x" + __file__})
        assert other is not None and other.line == 15
