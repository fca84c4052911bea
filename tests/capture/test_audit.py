"""The capture audit on small models written here: each hazard found at the line marked for it.

A marked line ends with ``# hazard: CODE``; ``marked_lines`` reads this file to find them, so
the expected lines move with the code.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
import transformers
from torch import nn

from graphlint.tracer.capture.audit import audit_target
from graphlint.tracer.capture.fake_device import run_on_audit_device
from graphlint.tracer.capture.placement import modules_reached_by
from graphlint.tracer.stages.base import TraceTarget

THIS_FILE = str(Path(__file__).resolve())


def marked_lines() -> dict[str, set[tuple[str, int]]]:
    """{test model name: {(code, line)}} from ``# hazard: CODE`` markers under ``class Name``."""
    marks: dict[str, set[tuple[str, int]]] = {}
    current = None
    for number, text in enumerate(Path(THIS_FILE).read_text().splitlines(), start=1):
        if m := re.match(r"class (\w+)\(nn\.Module\)", text):
            current = m[1]
            marks[current] = set()
        for code in re.findall(r"# hazard: (GL\d+)", text):
            marks[current].add((code, number))
    return marks


def audit(model: nn.Module, *args: object) -> set[tuple[str, int]]:
    target = TraceTarget(model, [args], [{}], type(model).__name__, {THIS_FILE})
    result = audit_target(target, torchair=None)
    return {(f.code, f.line) for f in result.findings if f.severity == "error"}


class HostArangeMovedToDevice(nn.Module):
    def forward(self, x):
        return x + torch.arange(x.shape[-1]).to(x.device)  # hazard: GL201 # hazard: GL203


class ResultBroughtToHost(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x).cpu()  # hazard: GL201


class CopyFromHostInPlace(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("state", torch.zeros(4))

    def forward(self, x):
        staging = torch.ones(4)  # hazard: GL203
        self.state.copy_(staging)  # hazard: GL201
        return x + self.state


class ValueReads(nn.Module):
    def forward(self, x):
        scale = x.abs().max().item()  # hazard: GL202
        first = x[0].tolist()  # hazard: GL202
        return x / scale, first


class DataDependentShapes(nn.Module):
    def forward(self, x):
        idx = torch.nonzero(x > 0)  # hazard: GL202
        picked = torch.masked_select(x, x < 0)  # hazard: GL202
        values = torch.unique(x.round())  # hazard: GL202
        return idx, picked, values


class BranchOnValue(nn.Module):
    def forward(self, x):
        y = x * 2
        if y.sum() > 0:  # hazard: GL202
            return y
        return -y


class PlainTensorAttribute(nn.Module):
    """A tensor attribute that is not a buffer stays on the host when the model moves."""

    def __init__(self):
        super().__init__()
        self.offsets = torch.arange(4.0)

    def forward(self, x):
        return x + self.offsets  # hazard: GL203


class TensorFromDataOnDevice(nn.Module):
    """``torch.tensor(data, device=)``: data built on the host and copied (as the static rule says)."""

    def forward(self, x):
        weights = torch.tensor([0.5, 1.0, 2.0, 4.0], device=x.device)  # hazard: GL201 # hazard: GL203
        return x * weights


class EmptyCacheGrown(nn.Module):
    """transformers' DynamicCache: an empty tensor made on the device, concatenated to. An empty
    copy moves no data, so nothing is reported."""

    def forward(self, x):
        cache = torch.tensor([], dtype=x.dtype, device=x.device)
        return torch.cat([cache, x.flatten()])


class DeviceSafe(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.register_buffer("offsets", torch.arange(4.0))

    def forward(self, x):
        h = torch.nn.functional.gelu(self.proj(x)) + self.offsets
        h = h + torch.arange(4, device=x.device) + torch.zeros_like(h)
        return torch.where(h > 0, h, 0).softmax(-1) * 0.5


MODELS = [
    HostArangeMovedToDevice,
    ResultBroughtToHost,
    CopyFromHostInPlace,
    ValueReads,
    DataDependentShapes,
    BranchOnValue,
    PlainTensorAttribute,
    TensorFromDataOnDevice,
    EmptyCacheGrown,
    DeviceSafe,
]


@pytest.mark.parametrize("model_class", MODELS, ids=lambda c: c.__name__)
def test_audit_finds_the_marked_hazards(model_class: type[nn.Module]) -> None:
    assert audit(model_class(), torch.randn(3, 4)) == marked_lines()[model_class.__name__]


def test_audit_leaves_the_model_and_torch_as_they_were() -> None:
    model = ResultBroughtToHost()
    audit(model, torch.randn(3, 4))
    assert {p.device.type for p in model.parameters()} == {"cpu"}
    assert model(torch.randn(3, 4)).shape == (3, 4)
    assert type(torch.tensor).__name__ == type(torch.as_tensor).__name__ == "builtin_function_or_method"
    with pytest.raises(RuntimeError, match="meta"):
        torch.ones((), device="meta").item()  # no stand-in value left behind


class Pipeline:
    """A user's object holding the model, as inference pipelines do."""

    def __init__(self) -> None:
        self.head = nn.Linear(4, 2)


def test_audit_moves_modules_a_plain_function_reaches() -> None:
    encoder = nn.Linear(4, 4)
    pipeline = Pipeline()

    def step(x):
        return pipeline.head(encoder(x)).relu()

    assert {id(m) for m in modules_reached_by(step)} == {id(encoder), id(pipeline.head)}
    run = run_on_audit_device(TraceTarget(step, [(torch.randn(3, 4),)], [{}], "step", {THIS_FILE}))
    assert run.error is None
    placeholders = [n.meta["val"] for g in run.graphs for n in g.module.graph.nodes if n.op == "placeholder"]
    assert {t.device.type for t in placeholders} == {"meta"}


def test_audit_of_a_target_that_fails_is_a_warning_not_a_crash() -> None:
    def broken(x):
        return x @ torch.ones(5, 5, device=x.device)  # shapes do not match

    target = TraceTarget(broken, [(torch.randn(3, 4),)], [{}], "broken", {THIS_FILE})
    findings = audit_target(target, torchair=None).findings
    assert [(f.kind, f.severity) for f in findings] == [("audit-incomplete", "warning")]
    assert findings[0].file == THIS_FILE


def test_a_transformers_decoder_with_its_kv_cache_is_audited_whole() -> None:
    config = transformers.LlamaConfig(
        num_hidden_layers=1,
        hidden_size=32,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=64,
        vocab_size=100,
    )
    model = transformers.LlamaForCausalLM(config).eval()
    target = TraceTarget(model, [(torch.randint(0, 100, (2, 8)),)], [{}], "llama", set())
    result = audit_target(target, torchair=None)
    assert len(result.graphs) == 1
    assert [(f.kind, f.message) for f in result.findings] == []
