"""The corpus harness's trace comparison and model builder, without torch or the corpus: how
break lines of ``graphlint trace`` are matched with ``explain``'s, and how configs are shrunk."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(HERE))

import break_trace  # noqa: E402
import model_builder  # noqa: E402

TRUTH = [
    {"file": "transformers/models/a/modeling_a.py", "line": 10, "codes": ["GB0291"]},
    {"file": "transformers/models/a/modeling_a.py", "line": 20, "codes": ["GB0124"]},
    {"file": "transformers/utils/output_capturing.py", "line": 332, "codes": ["GB4347"]},
    {"file": "transformers/models/a/modeling_a.py", "line": 40, "codes": []},
]


def test_compare_matches_by_line_and_code() -> None:
    traced = {
        ("transformers/models/a/modeling_a.py", 10): ["GB0291"],
        ("transformers/models/a/modeling_a.py", 20): ["GB0033"],  # same line, another code
        ("transformers/models/a/modeling_a.py", 40): [],  # neither side names a code
        ("transformers/models/a/modeling_a.py", 50): ["GB0170"],  # only the trace has it
    }
    result = break_trace.compare(TRUTH, traced)
    assert result["matched"] == ["transformers/models/a/modeling_a.py:10 GB0291", "transformers/models/a/modeling_a.py:40 -"]
    assert result["code_mismatch"] == ["transformers/models/a/modeling_a.py:20 GB0124 (trace: GB0033)"]
    assert result["missed"] == ["transformers/utils/output_capturing.py:332 GB4347"]
    assert result["extra"] == ["transformers/models/a/modeling_a.py:50 GB0170"]


def test_the_target_builds_the_model_the_truth_built() -> None:
    text = break_trace.TARGET.format(here="/bench", name="HubertModel", mode="train")
    functions = [node.name for node in ast.parse(text).body if isinstance(node, ast.FunctionDef)]
    assert functions == ["graphlint_target"]
    assert "build('HubertModel', 'train')" in text


def test_shrink_keeps_every_layer_kind_and_heads_that_divide_the_width() -> None:
    config = SimpleNamespace(
        num_hidden_layers=48, layer_types=["linear_attention"] * 3 + ["full_attention"] * 45,
        hidden_size=8192, intermediate_size=28672, num_attention_heads=64, num_key_value_heads=8,
        num_experts=64, num_experts_per_tok=8, text_config=SimpleNamespace(num_layers=12, to_dict=dict),
    )
    model_builder.shrink(config)
    assert config.num_hidden_layers == 2
    assert config.layer_types == ["linear_attention", "full_attention"]
    assert config.hidden_size == 1024
    assert config.hidden_size % config.num_attention_heads == 0
    assert config.num_attention_heads % config.num_key_value_heads == 0
    assert (config.num_experts, config.num_experts_per_tok) == (4, 4)
    assert config.text_config.num_layers == 2
