# Test targets: tiny transformers models built from configs with random weights (no download).
# One entry per model: graphlint trace tests/tracer/targets/transformers_models.py --entry gpt2
import torch
from transformers import BertConfig, BertModel, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

VOCAB = 128


def _ids(batch: int, length: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(length))


def gpt2():
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=VOCAB, n_positions=64)
    model = GPT2LMHeadModel(config).eval()
    # Default kwargs: the output carries a DynamicCache, compared by its tensors.
    return {"fn": model, "inputs": [(_ids(2, 8),)]}


def llama():
    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=64,
    )
    model = LlamaForCausalLM(config).eval()
    return {"fn": model, "inputs": [(_ids(1, 8),)], "kwargs": {"use_cache": False}}


def bert():
    torch.manual_seed(0)
    config = BertConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
        vocab_size=VOCAB, max_position_embeddings=64,
    )
    model = BertModel(config).eval()
    ids = _ids(2, 8)
    return {"fn": model, "inputs": [(ids, torch.ones_like(ids))]}
