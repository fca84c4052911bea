"""Behaviour of the eager, dynamo and aot stages on small real targets."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def repeated_break(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("targets") / "repeated_break.py"
    path.write_text(
        textwrap.dedent(
            """
            import torch

            def clip(x):
                if x.amax() > 1:
                    return x.clamp(max=1)
                return x

            def twice(x):
                return clip(clip(x * 3) - 2)

            def graphlint_target():
                return twice, (torch.linspace(0, 1, 5),)
            """
        ),
        encoding="utf-8",
    )
    return path


def test_a_graph_break_hit_twice_is_listed_once_with_its_count(repeated_break: Path, trace_json) -> None:
    status, report = trace_json(str(repeated_break), "--stages", "eager,dynamo")
    breaks = [f for f in report["findings"] if f["kind"] == "graph-break"]
    assert status == 1
    assert [(f["code"], f["line"]) for f in breaks] == [("GB0170", 5)]
    # each time dynamo met the break while compiling (inlined into twice, then clip's own frame)
    dynamo = next(row for row in report["stages"] if row["name"] == "dynamo")
    assert breaks[0]["count"] >= 2 and dynamo["graph_breaks"] == breaks[0]["count"]
    assert dynamo["status"] == "failed"


def test_stages_option_runs_only_the_stages_asked_for_in_ladder_order(trace_json) -> None:
    status, report = trace_json("samples/trace/clean.py", "--stages", "aot,eager")
    assert status == 0 and [r["name"] for r in report["stages"]] == ["eager", "aot"]
    assert {r["name"]: r for r in report["stages"]}["aot"]["graphs"] == 1  # inference: forward only


def test_train_builds_the_backward_graph_too(trace_json) -> None:
    status, training = trace_json("samples/trace/clean.py", "--stages", "eager,aot", "--train")
    aot = {r["name"]: r for r in training["stages"]}["aot"]
    assert status == 0 and aot["graphs"] == 2  # forward and backward


def test_a_first_call_far_slower_than_the_next_is_noted(tmp_path: Path, trace_json) -> None:
    path = tmp_path / "warmup.py"
    path.write_text(
        textwrap.dedent(
            """
            import time
            import torch

            warmed_up = []

            def step(x):
                if not warmed_up:  # first use: like operators JIT-compiled on an NPU
                    time.sleep(3)
                    warmed_up.append(True)
                return x + 1

            def graphlint_target():
                return {"fn": step, "inputs": [(torch.ones(1),), (torch.ones(1),)]}
            """
        ),
        encoding="utf-8",
    )
    status, report = trace_json(str(path), "--stages", "eager")
    notes = [f for f in report["findings"] if f["kind"] == "slow-first-run"]
    assert status == 0 and len(notes) == 1
    assert notes[0]["severity"] == "info" and "pytorch#1428" in notes[0]["refs"]


def test_each_stage_row_says_the_cpu_seconds_its_worker_spent(trace_json) -> None:
    _, report = trace_json("samples/trace/clean.py", "--stages", "aot,eager")
    rows = {r["name"]: r for r in report["stages"]}
    # compiling through AOTAutograd costs CPU; one eager call of a tiny function next to none
    assert rows["aot"]["cpu_seconds"] > 0.05
    assert rows["aot"]["cpu_seconds"] > rows["eager"]["cpu_seconds"] >= 0
