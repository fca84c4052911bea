"""Guards that decide, per call, what a function returns or runs: the false-alarm classes vLLM's
decoder layers showed once the value flow reached them.

- a quantization config's ``get_quant_method(layer)`` returns a method per layer class, under
  ``isinstance`` tests of every form (``or``, a tuple, ``not ...`` then ``return``);
- ``set_forward_context(num_tokens_across_dp=None)`` synchronizes only under ``if p is None:``,
  so a call that passes a value never runs it;
- a parameter's default flows only where some call leaves the argument out;
- under CUDA or NPU graph capture, a custom op dispatches to its accelerator kernels, never to
  ``forward_cpu``.

Each test is a small project in that shape, read through ``graphlint regions``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checks.test_value_flow import regions

QUANT_CONFIG = """
import torch
from torch import nn


class LinearMethod:
    def apply(self, layer, x):
        return x


class MoeMethod:
    def apply(self, layer, x):
        return x.sum().item()


class QuantConfig:
    lm_head_quantized = True

    def get_quant_method(self, layer, prefix):
{body}


class LinearBase(nn.Module):
    def __init__(self, quant_config):
        super().__init__()
        self.quant_method = quant_config.get_quant_method(self, prefix="")

    def forward(self, x):
        return self.quant_method.apply(self, x)


class ParallelLMHead(nn.Module):
    def __init__(self, quant_config):
        super().__init__()
        self.quant_method = quant_config.get_quant_method(self, prefix="lm_head")

    def forward(self, x):
        return self.quant_method.apply(self, x)


class FusedMoE(nn.Module):
    def __init__(self, quant_config):
        super().__init__()
        self.quant_method = quant_config.get_quant_method(self, "experts")

    def forward(self, x):
        return self.quant_method.apply(self, x)


class Model(nn.Module):
    def __init__(self, quant_config):
        super().__init__()
        self.proj = LinearBase(quant_config)
        self.lm_head = ParallelLMHead(quant_config)
        self.experts = FusedMoE(quant_config)

    def forward(self, x):
        return self.{called}(x)


fast = torch.compile(Model(QuantConfig()))
"""

GUARD_FORMS = {
    "nested": """
        if isinstance(layer, (LinearBase, ParallelLMHead)):
            if prefix.startswith("skip"):
                return None
            return LinearMethod()
        elif isinstance(layer, (FusedMoE,)):
            return MoeMethod()
        return None""",
    "or": """
        if isinstance(layer, LinearBase) or (isinstance(layer, ParallelLMHead) and self.lm_head_quantized):
            return LinearMethod()
        elif isinstance(layer, FusedMoE):
            return MoeMethod()
        return None""",
    "tuple": """
        if isinstance(layer, (LinearBase, ParallelLMHead)):
            return LinearMethod()
        if isinstance(layer, FusedMoE):
            return MoeMethod()
        return None""",
    "not-then-return": """
        if not isinstance(layer, FusedMoE):
            return LinearMethod()
        return MoeMethod()""",
    "not-else": """
        if not isinstance(layer, (LinearBase, ParallelLMHead)):
            return MoeMethod()
        else:
            return LinearMethod()""",
}


@pytest.mark.parametrize("form", sorted(GUARD_FORMS))
@pytest.mark.parametrize(
    ("called", "method"),
    [("lm_head", "app.LinearMethod.apply"), ("proj", "app.LinearMethod.apply"), ("experts", "app.MoeMethod.apply")],
    ids=["lm-head", "linear", "moe"],
)
def test_a_quant_method_chosen_by_isinstance_goes_only_to_the_layers_of_its_classes(
    tmp_path: Path, form: str, called: str, method: str
) -> None:
    """vLLM's quantization configs (``awq_marlin``: ``isinstance(layer, LinearBase) or
    (isinstance(layer, ParallelLMHead) and ...)``): the LM head gets the linear method, never the
    MoE method and its host synchronization; the MoE layer never the linear one."""
    (entry,) = regions(tmp_path, {"app.py": QUANT_CONFIG.format(body=GUARD_FORMS[form], called=called)})
    layer = {"lm_head": "app.ParallelLMHead.forward", "proj": "app.LinearBase.forward", "experts": "app.FusedMoE.forward"}[called]
    assert entry["functions"] == sorted([method, layer, "app.Model.forward"])


def test_an_outside_value_for_the_guarded_parameter_opens_only_outside_classes(tmp_path: Path) -> None:
    """A layer graphlint knows only as an instance of an outside class (``nn.Linear``) is no
    instance of a project class: the project's MoE branch stays closed; a value graphlint does
    not know at all (what an outside call returns) opens every branch."""
    code = QUANT_CONFIG.format(body=GUARD_FORMS["tuple"], called="proj") + """

class Outside(nn.Module):
    def __init__(self, quant_config):
        super().__init__()
        self.quant_method = quant_config.get_quant_method(nn.Linear(2, 2), "")
        self.unknown_method = quant_config.get_quant_method(torch.load("layer.pt"), "")

    def forward(self, x):
        return self.quant_method.apply(self, x)

    def unknown(self, x):
        return self.unknown_method.apply(self, x)


outside = torch.compile(Outside(QuantConfig()))
unknown = torch.compile(Outside(QuantConfig()).unknown)
"""
    _, known_outside, unknown = regions(tmp_path, {"app.py": code})
    assert "app.MoeMethod.apply" not in known_outside["functions"]
    assert "app.LinearMethod.apply" not in known_outside["functions"]
    assert {"app.MoeMethod.apply", "app.LinearMethod.apply"} <= set(unknown["functions"])


def test_a_guard_on_a_rebound_parameter_guards_nothing(tmp_path: Path) -> None:
    """``layer = unwrap(layer)`` before the test: the guard speaks of another value, so every
    return counts."""
    body = "\n        layer = unwrap(layer)" + GUARD_FORMS["nested"]
    code = QUANT_CONFIG.format(body=body, called="proj") + "\n\ndef unwrap(layer):\n    return layer\n"
    (entry,) = regions(tmp_path, {"app.py": code})
    assert {"app.MoeMethod.apply", "app.LinearMethod.apply"} <= set(entry["functions"])


LAYER_TYPE_DEFAULT = """
import torch
from torch import nn


class LlamaDecoderLayer(nn.Module):
    def forward(self, x):
        return x * x.abs().max().item()


class MixtralDecoderLayer(nn.Module):
    def forward(self, x):
        return x * 2


def make_layer(layer_type=LlamaDecoderLayer):
    return layer_type()


class LlamaModel(nn.Module):
    def __init__(self, *, prefix="", layer_type=LlamaDecoderLayer):
        super().__init__()
        self.layers = nn.ModuleList([layer_type() for _ in range(2)])
        self.extra = make_layer(layer_type=layer_type)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.extra(x)


class MixtralModel(LlamaModel):
    def __init__(self):
        super().__init__(prefix="model", layer_type=MixtralDecoderLayer)


fast = torch.compile(MixtralModel())
{more}
"""


# built by a framework out of sight (a registry by name): its __init__ runs with its defaults
NEVER_CONSTRUCTED = """
class Head(nn.Module):
    def __init__(self, layer_type=LlamaDecoderLayer):
        super().__init__()
        self.layer = layer_type()

    def forward(self, x):
        return self.layer(x)


head = torch.compile(Head.forward)
"""


@pytest.mark.parametrize(
    ("more", "llama"),
    [
        ("", False),
        ("llama = torch.compile(LlamaModel(prefix='llama'))", True),
        ("torch.utils.hooks.register(make_layer)", True),
        (NEVER_CONSTRUCTED, True),
    ],
    ids=["every-call-passes-it", "a-call-leaves-it-out", "handed-to-an-outside-call", "no-call-in-sight"],
)
def test_a_default_flows_only_where_a_call_can_leave_the_argument_out(tmp_path: Path, more: str, llama: bool) -> None:
    """vLLM's ``LlamaModel.__init__(..., layer_type=LlamaDecoderLayer)``: a model that derives
    from it passes its own ``layer_type``, so its compiled ``forward`` never runs a
    ``LlamaDecoderLayer``; a call that leaves the argument out does, and so may an outside call
    that is handed the function (``make_layer``)."""
    entries = regions(tmp_path, {"app.py": LAYER_TYPE_DEFAULT.format(more=more)})
    assert "app.MixtralDecoderLayer.forward" in entries[0]["functions"]
    assert ("app.LlamaDecoderLayer.forward" in set().union(*(e["functions"] for e in entries))) is llama
