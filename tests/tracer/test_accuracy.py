"""Outputs compared with eager, with tolerances by dtype."""

from __future__ import annotations

import textwrap
from pathlib import Path

import torch

from graphlint.tracer.accuracy import compare_outputs


def test_equal_and_within_tolerance_outputs_pass() -> None:
    x = torch.linspace(1, 2, 16).reshape(4, 4)
    assert compare_outputs("aot", (x, {"k": [x.half()]}), (x.clone(), {"k": [x.half().clone()]})) is None
    assert compare_outputs("aot", x, x + 1e-7) is None
    assert compare_outputs("aot", x.bfloat16(), (x + 1e-3).bfloat16()) is None  # within bf16's tolerance


def test_float32_difference_names_the_stage_and_the_largest_error() -> None:
    x = torch.zeros(3)
    y = torch.tensor([0.0, 1.55, 0.5])
    finding = compare_outputs("aot", (x,), (y,))
    assert finding is not None and finding.layer == "accuracy" and finding.code == "GT004"
    assert finding.message.startswith("aot output differs from eager by 1.55")
    assert finding.details["max_abs_error"] == torch.tensor(1.55).item()


def test_the_same_difference_passes_in_bf16_but_not_in_fp32() -> None:
    ref = torch.full((8,), 100.0)
    act = ref + 0.5
    assert compare_outputs("dynamo", ref.bfloat16(), act.bfloat16()) is None
    assert compare_outputs("dynamo", ref, act) is not None


def test_structure_shape_and_dtype_differences() -> None:
    x = torch.ones(2)
    assert "structure" in compare_outputs("dynamo", (x, x), (x,)).message
    assert "shape" in compare_outputs("dynamo", x, torch.ones(3)).details["where"]
    assert "dtype" in compare_outputs("dynamo", x, x.double()).details["where"]
    assert compare_outputs("dynamo", torch.tensor([1, 2]), torch.tensor([1, 3])) is not None
    nan = torch.tensor([float("nan")])
    assert compare_outputs("dynamo", nan, nan.clone()) is None
    assert compare_outputs("dynamo", nan, torch.zeros(1)) is not None


def test_objects_without_their_own_equality_are_compared_by_what_they_hold() -> None:
    from transformers import DynamicCache

    def cache(value: float) -> DynamicCache:
        kv = torch.full((1, 2, 3, 4), value)
        c = DynamicCache()
        c.update(kv, kv.clone(), layer_idx=0)
        return c

    assert compare_outputs("dynamo", (torch.ones(2), cache(1.0)), (torch.ones(2), cache(1.0))) is None
    finding = compare_outputs("dynamo", cache(1.0), cache(1.5))
    assert finding is not None and finding.message.startswith("dynamo output differs from eager by 0.5")
    assert "DynamicCache" in finding.details["where"]


def test_a_stateful_model_is_compared_from_the_state_it_was_built_in(tmp_path: Path, trace_json) -> None:
    target = tmp_path / "stateful.py"
    target.write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn

            class Counter(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.calls = 0

                def forward(self, x):
                    self.calls += 1  # state kept across calls: eager and compiled runs disagree
                    return x * self.calls

            model = Counter()
            example_inputs = (torch.ones(3),)
            """
        ),
        encoding="utf-8",
    )
    # Each later stage runs on a copy taken before the eager call, as a user's first compiled call
    # finds the model: the counter is 1 in both runs, and the change is told, not compared away.
    status, report = trace_json(str(target), "--stages", "eager,dynamo")
    assert status == 0 and not [f for f in report["findings"] if f["layer"] == "accuracy"]
    [note] = [f for f in report["findings"] if f["stage"] == "eager"]
    assert note["kind"] == "first-call-state" and "Counter.calls: 0 → 1" in note["message"]


def test_low_precision_rounding_is_judged_against_a_float64_run() -> None:
    # Values of 0.01 computed two ways, each with its own rounding noise of 1e-3 (relative 0.1,
    # far beyond bf16's rtol): elementwise they differ, yet neither is further from the exact
    # values than the other.
    exact = torch.full((1000,), 0.01, dtype=torch.float64)
    noise = torch.Generator().manual_seed(0)
    ref = (exact + 1e-3 * torch.randn(1000, generator=noise, dtype=torch.float64)).bfloat16()
    act = (exact + 1e-3 * torch.randn(1000, generator=noise, dtype=torch.float64)).bfloat16()
    assert compare_outputs("torchair", ref, act) is not None
    asked: list[bool] = []

    def fp64() -> tuple[torch.Tensor]:
        asked.append(True)
        return (exact,)

    assert compare_outputs("torchair", (ref,), (act,), fp64) is None and asked == [True]
    # A real error stays one, and says how far from float64 it is against eager's own error.
    wrong = compare_outputs("torchair", (ref,), ((exact + 0.05).bfloat16(),), fp64)
    assert wrong is not None and "from float64 where eager is" in wrong.details["where"]
    # float32 outputs are never sent to the float64 run; without one, the dtype's tolerance judges.
    assert compare_outputs("aot", torch.zeros(3), torch.ones(3), lambda: asked.append(False)) is not None
    assert asked == [True, True] and compare_outputs("torchair", ref, act, lambda: None) is not None


def test_the_float64_run_is_the_target_before_any_call_cast_to_float64() -> None:
    from graphlint.tracer.first_call import pristine_copy
    from graphlint.tracer.fp64_reference import fp64_outputs
    from graphlint.tracer.stages.base import StageContext, TraceOptions, TraceTarget

    model = torch.nn.Linear(4, 2).to(torch.bfloat16)
    target = TraceTarget(model, [(torch.ones(3, 4, dtype=torch.bfloat16),)], [{}], name="linear")
    ctx = StageContext(target, TraceOptions())
    assert fp64_outputs(ctx) is None  # no copy of the target as built: nothing to cast
    ctx = StageContext(target, TraceOptions())
    ctx.pristine = pristine_copy(target)
    [out] = fp64_outputs(ctx)
    assert out.dtype == torch.float64 and model.weight.dtype == torch.bfloat16  # the target is untouched
    expected = torch.ones(3, 4, dtype=torch.float64) @ model.weight.double().T + model.bias.double()
    assert torch.allclose(out, expected)
