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


# Real model shapes the NPU stages must be faithful on (MoE routing, custom ops, list indexing,
# state-space scans, soft-capping). Tiny sizes, random weights; ``*_bf16`` entries in bfloat16.
# graphlint trace tests/tracer/targets/transformers_models.py --entry qwen3_moe [--train]
_TINY = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, vocab_size=VOCAB)
_TINY_ATTENTION = dict(_TINY, num_key_value_heads=1, head_dim=16, max_position_embeddings=64)
_TINY_MOE = dict(num_experts_per_tok=2, moe_intermediate_size=16)


def _causal_lm(config_name: str, model_name: str, dtype: torch.dtype = torch.float32, **sizes):
    import transformers

    torch.manual_seed(0)
    config = getattr(transformers, config_name)(**sizes)
    model = getattr(transformers, model_name)(config).to(dtype)
    return {"fn": model, "inputs": [(_ids(1, 8),)], "kwargs": {"use_cache": False}}


def qwen3_moe(dtype: torch.dtype = torch.float32):
    sizes = dict(_TINY_ATTENTION, **_TINY_MOE, num_experts=4, decoder_sparse_step=1)
    return _causal_lm("Qwen3MoeConfig", "Qwen3MoeForCausalLM", dtype, **sizes)


def mixtral(dtype: torch.dtype = torch.float32):
    sizes = dict(_TINY_ATTENTION, num_experts_per_tok=2, num_local_experts=4)
    return _causal_lm("MixtralConfig", "MixtralForCausalLM", dtype, **sizes)


def deepseek_v3(dtype: torch.dtype = torch.float32):
    sizes = dict(
        _TINY, num_key_value_heads=2, max_position_embeddings=64, **_TINY_MOE, n_routed_experts=4,
        n_shared_experts=1, n_group=1, topk_group=1, first_k_dense_replace=0, kv_lora_rank=16,
        q_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16,
    )
    return _causal_lm("DeepseekV3Config", "DeepseekV3ForCausalLM", dtype, **sizes)


def qwen3_moe_bf16():
    return qwen3_moe(torch.bfloat16)


def mixtral_bf16():
    return mixtral(torch.bfloat16)


def deepseek_v3_bf16():
    return deepseek_v3(torch.bfloat16)


def falcon():
    sizes = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, vocab_size=VOCAB)
    return _causal_lm("FalconConfig", "FalconForCausalLM", **sizes)


def mamba():
    sizes = dict(hidden_size=32, num_hidden_layers=1, vocab_size=VOCAB, state_size=4, intermediate_size=64)
    return _causal_lm("MambaConfig", "MambaForCausalLM", **sizes)


def gemma2():
    return _causal_lm("Gemma2Config", "Gemma2ForCausalLM", **_TINY_ATTENTION)


def qwen3():
    return _causal_lm("Qwen3Config", "Qwen3ForCausalLM", **_TINY_ATTENTION)


def whisper():
    """An encoder-decoder speech model: log-mel features in, decoder logits out."""
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(0)
    config = WhisperConfig(
        vocab_size=VOCAB, num_mel_bins=16, d_model=32, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
        max_source_positions=16, max_target_positions=32, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        decoder_start_token_id=1,
    )
    model = WhisperForConditionalGeneration(config).eval()
    features = torch.randn(1, config.num_mel_bins, 2 * config.max_source_positions, generator=torch.Generator().manual_seed(0))
    return {"fn": model, "inputs": [(features,)], "kwargs": {"decoder_input_ids": _ids(1, 8), "use_cache": False}}
