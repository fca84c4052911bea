# A tiny Qwen3-MoE (random weights, built from a config: no download) for the torchair repro test.
# graphlint trace tests/repro/targets/qwen3_moe.py
import torch
from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

VOCAB = 128


def graphlint_target():
    torch.manual_seed(0)
    config = Qwen3MoeConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, moe_intermediate_size=16,
        num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
        num_experts=4, num_experts_per_tok=2, max_position_embeddings=64,
    )
    model = Qwen3MoeForCausalLM(config).eval()
    ids = torch.randint(0, VOCAB, (1, 6), generator=torch.Generator().manual_seed(0))
    return {"fn": model, "inputs": [(ids,)], "kwargs": {"use_cache": False}}
