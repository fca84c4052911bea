"""The dynamo, aot and torchair stages through one compile (``one_compile.py``): each stage's
result is the one it gets compiling alone, torchair stays hidden from the user's code until its
own stage, and a stage the one compile cannot serve compiles alone."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.tracer.conftest import REPO, TARGETS

STAGES = ("eager", "dynamo", "aot", "torchair")


def _key(result: Any) -> tuple[Any, ...]:
    findings = sorted(
        (f.kind, f.code, os.path.basename(f.file or "-"), f.line, f.count) for f in result.findings
    )
    return result.status, result.graphs, result.graph_breaks, result.recompiles, findings


class Run:
    """The stages run in this process as a worker runs them, noting the one compile after each."""

    def __init__(self, target: Any, shares: bool, train: bool = False) -> None:
        from graphlint.tracer.first_call import copy_of, pristine_copy
        from graphlint.tracer.one_compile import KEY
        from graphlint.tracer.stages.base import StageContext, TraceOptions
        from graphlint.tracer.worker import EventWriter, run_stage

        self.phases: list[str] = []
        ctx = StageContext(target, TraceOptions(train=train))
        ctx.pristine = pristine_copy(target)
        ctx.shares_compile = shares
        ctx.announce = self.phases.append
        self.results: dict[str, Any] = {}
        self.usable_after: dict[str, dict[str, bool] | None] = {}
        self.torchair_visible_after: dict[str, bool] = {}
        for name in STAGES:
            if name != "eager" and ctx.pristine is not None:
                ctx.target = copy_of(ctx.pristine)
            self.results[name] = run_stage(name, ctx, EventWriter(io.StringIO()))
            one = ctx.shared.get(KEY)
            self.usable_after[name] = dict(one.usable) if one is not None else None
            self.torchair_visible_after[name] = any(n.split(".")[0] in ("torchair", "torch_npu") for n in sys.modules)

    def keys(self) -> dict[str, tuple[Any, ...]]:
        return {name: _key(result) for name, result in self.results.items()}


@pytest.fixture(scope="module")
def sees_torchair() -> Any:
    from graphlint.tracer.target import load_target

    target = load_target(str(TARGETS / "sees_torchair.py"))  # once: it registers a custom op
    return target, sys.modules[target.fn.__class__.__module__]


def test_one_compile_gives_each_stage_its_own_result_and_hides_torchair_until_its_stage(
    sees_torchair: Any, torch_npu_wheel: Path
) -> None:
    import torch

    target, module = sees_torchair
    module.SEEN.clear()
    shared = Run(target, shares=True)
    seen_shared = list(module.SEEN)
    alone = Run(target, shares=False)
    assert shared.keys() == alone.keys()
    assert shared.results["torchair"].mode == "offline"
    # torchair's translation and aot_eager ran inside the dynamo stage, announced as theirs
    assert shared.phases[:2] == ["torchair", "dynamo"] and "aot" in shared.phases
    assert shared.usable_after["dynamo"] == {"dynamo": True, "aot": True, "torchair": True}
    assert shared.usable_after["aot"]["aot"] and shared.usable_after["torchair"] is None  # closed
    # imported since the dynamo stage began, yet never seen by the user's code before its stage
    assert not shared.torchair_visible_after["dynamo"] and not shared.torchair_visible_after["aot"]
    if torch.distributed.is_available():
        assert torch.distributed.all_reduce.__module__.startswith("torch.")
    fake_seen = [visible for kernel, visible in seen_shared if kernel == "fake"]
    real_seen = [visible for kernel, visible in seen_shared if kernel == "real"]
    # traced with torchair hidden (dynamo, aot), then shown (torchair's translation); the real
    # kernel ran in eager, dynamo and aot hidden, in the torchair stage's run shown
    assert True in fake_seen and False in fake_seen
    assert real_seen[-1] and not any(real_seen[:-1])
    assert [visible for kernel, visible in module.SEEN[len(seen_shared):] if kernel == "real"][-1]


def test_a_stage_whose_run_compiles_again_compiles_alone(torch_npu_wheel: Path) -> None:
    from graphlint.tracer.target import load_target

    # two batch sizes: the aot stage's run through dynamo's cache compiles a dynamic graph
    target = load_target(str(REPO / "samples" / "trace" / "str_on_symint.py"))
    shared = Run(target, shares=True)
    assert not shared.usable_after["aot"]["aot"]
    assert shared.keys() == Run(target, shares=False).keys()


def test_train_compiles_each_stage_its_own_backward_graphs(torch_npu_wheel: Path) -> None:
    from graphlint.tracer.target import load_target

    target = load_target(str(REPO / "samples" / "trace" / "converter_gap.py"))
    shared = Run(target, shares=True, train=True)
    assert all(shared.usable_after["aot"].values())
    assert shared.keys() == Run(target, shares=False, train=True).keys()
