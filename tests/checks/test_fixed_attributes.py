"""A ``self`` attribute fixed in ``__init__`` decides, per branch of a test on it, which function
another attribute holds (``self_tests.py``, ``fixed_attributes.py``): sglang's (and transformers')
rotary embeddings store ``self.rope_init_fn = self.compute_default_rope_parameters`` only under
``if self.rope_type == "default":`` and call ``self._dynamic_frequency_update(...)``, which calls
``self.rope_init_fn(...)``, only under ``if "dynamic" in self.rope_type:``. Small projects in
sglang's module layout and in a transformers model's, written here."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.checks.conftest import lint_project

SGLANG = '[tool.graphlint]\npresets = ["sglang"]\n'

# sglang's shape: the model's forward runs in the NPU capture (the sglang preset's exports).
SGLANG_MODEL = """
    import torch
    from torch import nn
    from transformers import ROPE_INIT_FUNCTIONS


    class RotaryEmbedding(nn.Module):
        def __init__(self, config, device=None):
            super().__init__()
            rope_scaling = config.rope_parameters
            if rope_scaling is not None:
                self.rope_type = rope_scaling.get("rope_type", "default")
            else:
                self.rope_type = "default"
            if self.rope_type is None:
                self.rope_type = "default"
            self.max_seq_len_cached = config.max_position_embeddings
            self.config = config
            if self.rope_type == "default":
                self.rope_init_fn = self.compute_default_rope_parameters
            else:
                self.rope_init_fn = ROPE_INIT_FUNCTIONS[self.rope_type]
            inv_freq, self.attention_scaling = self.rope_init_fn(self.config, device)
            self.register_buffer("inv_freq", inv_freq, persistent=False)

        def _dynamic_frequency_update(self, position_ids, device):
            seq_len = torch.max(position_ids) + 1
            if seq_len > self.max_seq_len_cached:  # a sync, captured under a dynamic type
                inv_freq, self.attention_scaling = self.rope_init_fn(self.config, device, seq_len=seq_len)
                self.register_buffer("inv_freq", inv_freq, persistent=False)

        @staticmethod
        def compute_default_rope_parameters(config, device=None, seq_len=None):
            dim = config.head_dim
            positions = torch.arange(0, dim, 2, dtype=torch.int64)  # the default type's: never updated
            return 1.0 / (10000.0 ** (positions.float() / dim)), 1.0

        @torch.no_grad()
        def forward(self, x, position_ids):
            if "dynamic" in self.rope_type:
                self._dynamic_frequency_update(position_ids, device=x.device)
            freqs = self.inv_freq[None, :, None].float() @ position_ids[:, None, :].float()
            return freqs.cos(), freqs.sin()


    class Model(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.rotary_emb = RotaryEmbedding(config)

        def forward(self, input_ids, positions, forward_batch):
            cos, sin = self.rotary_emb(input_ids, positions)
            return cos + sin


    EntryClass = Model
"""

# A transformers model's shape: the test of the store is ``!=`` (the default in the ``else``), the
# update runs for a tuple of types and reaches ``self.rope_init_fn`` a call further; the model is
# run in a capture block.
TRANSFORMERS_MODEL = """
    import torch
    from torch import nn
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS


    class LlamaRotaryEmbedding(nn.Module):
        def __init__(self, config, device=None):
            super().__init__()
            if getattr(config, "rope_scaling", None) is not None:
                self.rope_type = config.rope_scaling.get("rope_type", config.rope_scaling.get("type"))
            else:
                self.rope_type = "default"
            self.original_max_seq_len = config.max_position_embeddings
            self.config = config
            if self.rope_type != "default":
                self.rope_init_fn = ROPE_INIT_FUNCTIONS[self.rope_type]
            else:
                self.rope_init_fn = self._compute_default_rope_parameters
            inv_freq, self.attention_scaling = self.rope_init_fn(self.config, device)
            self.register_buffer("inv_freq", inv_freq, persistent=False)

        def _compute_default_rope_parameters(self, config, device=None, seq_len=None):
            dim = config.hidden_size // config.num_attention_heads
            positions = torch.arange(0, dim, 2, dtype=torch.int64)  # the default type's: never updated
            return 1.0 / (10000.0 ** (positions.float() / dim)), 1.0

        def _recompute(self, device, seq_len):
            inv_freq, self.attention_scaling = self.rope_init_fn(self.config, device, seq_len=seq_len)
            self.register_buffer("inv_freq", inv_freq, persistent=False)

        def _dynamic_frequency_update(self, position_ids, device):
            seq_len = torch.max(position_ids) + 1
            if seq_len > self.original_max_seq_len:  # a sync, captured under a dynamic type
                self._recompute(device, seq_len)

        @torch.no_grad()
        def forward(self, x, position_ids):
            if self.rope_type in ("dynamic", "longrope"):
                self._dynamic_frequency_update(position_ids, device=x.device)
            freqs = self.inv_freq[None, :, None].float() @ position_ids[:, None, :].float()
            return freqs.cos(), freqs.sin()


    class LlamaModel(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.rotary_emb = LlamaRotaryEmbedding(config)

        def forward(self, x, position_ids):
            return self.rotary_emb(x, position_ids)


    def capture(config, x, position_ids):
        model = LlamaModel(config)
        graph = torch.npu.NPUGraph()
        with torch.npu.graph(graph):
            model(x, position_ids)
        return graph
"""

SGLANG_PATH = "sglang/srt/models/rope_model.py"
TRANSFORMERS_PATH = "modeling_llama.py"


def _files(path: str, model: str, *extra: tuple[str, str]) -> dict[str, str]:
    package = {"sglang/__init__.py": "", "sglang/srt/__init__.py": "", "sglang/srt/models/__init__.py": ""}
    files = {**(package if path == SGLANG_PATH else {}), path: model}
    return {name: textwrap.dedent(text) for name, text in (*files.items(), *extra)}


def _marked(model: str, marker: str) -> int:
    return next(n for n, line in enumerate(textwrap.dedent(model).splitlines(), 1) if f"# {marker}" in line)


def _lines(root: Path, files: dict[str, str], path: str, pyproject: str = "") -> set[int]:
    _, report = lint_project(root, files, pyproject=pyproject)
    return {f["line"] for f in report["findings"] if f["path"].endswith(path)}


# ``forward`` calls the attribute itself, under its own test
DIRECT_MODEL = SGLANG_MODEL.replace(
    "                self._dynamic_frequency_update(position_ids, device=x.device)\n",
    "                self._dynamic_frequency_update(position_ids, device=x.device)\n"
    "                self.inv_freq, _ = self.rope_init_fn(self.config, x.device)\n",
)
assert DIRECT_MODEL != SGLANG_MODEL


@pytest.mark.parametrize(
    ("path", "model", "pyproject"),
    [(SGLANG_PATH, SGLANG_MODEL, SGLANG), (TRANSFORMERS_PATH, TRANSFORMERS_MODEL, ""), (SGLANG_PATH, DIRECT_MODEL, SGLANG)],
    ids=["sglang", "transformers", "direct"],
)
def test_a_store_under_a_test_the_call_path_contradicts_is_not_followed(
    tmp_path: Path, path: str, model: str, pyproject: str
) -> None:
    lines = _lines(tmp_path, _files(path, model), path, pyproject)
    # the update's own sync is captured; the default type's function never runs from it
    assert _marked(model, "a sync, captured") in lines
    assert _marked(model, "the default type's") not in lines


DEFAULT_LINE = "the default type's"
SGLANG_CASES = {
    # a method stores the type again: it is not fixed
    "stored outside __init__": ("    @torch.no_grad()\n    def forward", "    def set_type(self, rope_type):\n        self.rope_type = rope_type\n\n    @torch.no_grad()\n    def forward"),
    # the call runs where the default's store holds too
    "a consistent branch": ('if "dynamic" in self.rope_type:', 'if self.rope_type in ("default", "dynamic"):'),
    # a test graphlint does not judge
    "an unknown test": ('if "dynamic" in self.rope_type:', 'if self.rope_type.startswith("dyn"):'),
    # the other store's table is the project's: it may hold the default's function
    "a table of the project": ("from transformers import ROPE_INIT_FUNCTIONS", "from sglang.srt.rope_table import ROPE_INIT_FUNCTIONS"),
    # any attribute may be stored by a name computed at run time
    "setattr on self": ("        self.config = config\n", "        self.config = config\n        setattr(self, config.key, config.value)\n"),
    # the type is stored again after the test of the store
    "stored after the test": (
        "            self.rope_init_fn = self.compute_default_rope_parameters\n",
        '            self.rope_init_fn = self.compute_default_rope_parameters\n            self.rope_type = "dynamic"\n',
    ),
    # a subclass's __init__ stores the type too
    "a subclass stores it": (
        "\n\nclass Model(nn.Module):",
        '\n\nclass Dynamic(RotaryEmbedding):\n    def __init__(self, config):\n        super().__init__(config)\n        self.rope_type = "dynamic"\n\n\nclass Model(nn.Module):',
    ),
}
TABLE = 'from sglang.srt.models.rope_model import RotaryEmbedding\n\nROPE_INIT_FUNCTIONS = {"default": RotaryEmbedding.compute_default_rope_parameters}\n'


@pytest.mark.parametrize("case", list(SGLANG_CASES))
def test_the_default_function_stays_where_the_store_is_not_known_to_be_excluded(tmp_path: Path, case: str) -> None:
    old, new = SGLANG_CASES[case]
    model = textwrap.dedent(SGLANG_MODEL)
    assert old in model, case
    model = model.replace(old, new)
    lines = _lines(tmp_path, _files(SGLANG_PATH, model, ("sglang/srt/rope_table.py", TABLE)), SGLANG_PATH, SGLANG)
    assert _marked(model, DEFAULT_LINE) in lines
