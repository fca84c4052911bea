"""Values a shared helper hands back or builds, kept per caller: identity layers, layer factories
and decorator closures.

In vLLM every model shares a pipeline placeholder layer whose ``forward(*args, **kwargs)``
returns its first argument, and one ``make_layers(n, layer_fn, prefix)`` that calls each model's
layer factory; transformers' decorators share one closure wrapper. Context-insensitive, each of
them hands every model's values to every other model. Each test is a small project in those
shapes (written here), read through ``graphlint regions``.
"""

from __future__ import annotations

from pathlib import Path

from tests.checks.test_value_flow import regions


def compiled(tmp_path: Path, files: dict[str, str], model: str) -> list[str]:
    """The functions of the one entry that reaches ``model``'s ``forward``."""
    (functions,) = [e["functions"] for e in regions(tmp_path, files) if f"{model}.forward" in e["functions"]]
    return functions

IDENTITY = """
from torch import nn


class MissingLayer(nn.Identity):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, *args, **kwargs):
        return args[0] if args else next(iter(kwargs.values()))


class Keyed(nn.Module):
    def forward(self, *args, **kwargs):
        return kwargs.get("block", args[0])
"""

MODELS = """
import torch
from torch import nn
from layers import Keyed, MissingLayer


class LlamaBlock(nn.Module):
    def forward(self, x):
        return x


class MambaBlock(nn.Module):
    def forward(self, x):
        return x


class QwenBlock(nn.Module):
    def forward(self, x):
        return x


class Llama(nn.Module):
    def __init__(self):
        super().__init__()
        self.placeholder = MissingLayer()
        self.block = LlamaBlock()

    def forward(self, x):
        block = self.placeholder(self.block)
        return block(x)


class Mamba(nn.Module):
    def __init__(self):
        super().__init__()
        self.placeholder = MissingLayer()
        self.block = MambaBlock()

    def forward(self, x):
        block = self.placeholder(block=self.block)
        return block(x)


class Qwen(nn.Module):
    def __init__(self):
        super().__init__()
        self.keyed = Keyed()

    def forward(self, x):
        return self.keyed(x, block=QwenBlock())(x)


class Falcon(nn.Module):
    def __init__(self):
        super().__init__()
        self.keyed = Keyed()

    def forward(self, x):
        return self.keyed(LlamaBlock())(x)


llama = torch.compile(Llama())
mamba = torch.compile(Mamba())
qwen = torch.compile(Qwen())
falcon = torch.compile(Falcon())
"""


def test_an_identity_layer_over_args_and_kwargs_returns_each_callers_own_argument(tmp_path: Path) -> None:
    """``return args[0] if args else next(iter(kwargs.values()))``: Llama's placeholder hands back
    Llama's block (by position), Mamba's hands back Mamba's (by keyword), never each other's."""
    llama = compiled(tmp_path, {"layers.py": IDENTITY, "models.py": MODELS}, "models.Llama")
    mamba = compiled(tmp_path, {"layers.py": IDENTITY, "models.py": MODELS}, "models.Mamba")
    assert "models.LlamaBlock.forward" in llama and "models.MambaBlock.forward" not in llama
    assert "models.MambaBlock.forward" in mamba and "models.LlamaBlock.forward" not in mamba


def test_a_keyword_read_with_a_default_returns_the_keyword_or_the_default(tmp_path: Path) -> None:
    """``kwargs.get("block", args[0])``: Qwen's call gets its own ``block=`` keyword (and its own
    first argument, a tensor), Falcon's its own first argument; neither the other's block."""
    qwen = compiled(tmp_path, {"layers.py": IDENTITY, "models.py": MODELS}, "models.Qwen")
    falcon = compiled(tmp_path, {"layers.py": IDENTITY, "models.py": MODELS}, "models.Falcon")
    assert "models.QwenBlock.forward" in qwen and "models.LlamaBlock.forward" not in qwen
    assert "models.LlamaBlock.forward" in falcon and "models.QwenBlock.forward" not in falcon


def test_an_identity_layer_called_with_unknown_arguments_returns_what_every_caller_passed(tmp_path: Path) -> None:
    """Soundness: ``self.placeholder(*blocks)`` fills ``args[0]`` from a tuple graphlint does not
    split, so the call gets the shared parameter: every block any caller handed the placeholder
    by position (here Mamba's too)."""
    models = MODELS.replace("block = self.placeholder(self.block)", "blocks = self.make()\n        block = self.placeholder(*blocks)", 1)
    models = models.replace("self.placeholder(block=self.block)", "self.placeholder(self.block)")
    models = models.replace("    def forward(self, x):\n        blocks", "    def make(self):\n        return [self.block]\n\n    def forward(self, x):\n        blocks", 1)
    llama = compiled(tmp_path, {"layers.py": IDENTITY, "models.py": models}, "models.Llama")
    assert "models.LlamaBlock.forward" in llama and "models.MambaBlock.forward" in llama
