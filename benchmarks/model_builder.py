"""Small Hugging Face models built from their configs (no weights), and inputs that fit them.

Built the way the corpus's sweep builds them, because that is what makes them break: graph
breaks come from the code a model runs, and which code runs depends on the inputs and the mode,
not on width or depth. So:

- every config is shrunk to two layers (keeping one layer of each kind a hybrid needs), few
  experts, and a hidden size of at most 1024;
- inputs are a batch of 2: 32 tokens and an all-ones attention mask for text models (and
  ``token_type_ids`` where the forward takes them), 32 encoder and 32 decoder tokens for
  encoder-decoders, one second of audio, an image of the config's size;
- a model runs in one of two modes: ``eval`` (``model.eval()`` under ``torch.no_grad()``) or
  ``train`` (``model.train()`` with grad enabled, forward only: dropout, layer-drop and the
  training-only branches such as SpecAugment masks run).

Used by ``break_corpus.py``; imports torch and transformers only when called.
"""

from __future__ import annotations

import inspect
from typing import Any

BATCH = 2
TOKENS = 32
VOCAB_CAP = 1000
AUDIO_SAMPLES = 16000
CODEC_STRIDE = 320  # codecs downsample by 320: a length they divide evenly
MAX_HIDDEN = 1024
MODES = ("eval", "train")

LAYER_FIELDS = (
    "num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers", "decoder_layers",
    "num_encoder_layers", "num_decoder_layers",
)
EXPERT_FIELDS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
TOP_K_FIELDS = ("num_experts_per_tok", "top_k", "moe_topk", "num_selected_experts")
SUB_CONFIGS = ("text_config", "vision_config", "audio_config", "encoder", "decoder", "speech_config")
CODEC_TYPES = ("encodec", "dac", "xcodec", "mimi")


def shrink(config: Any) -> Any:
    """Two layers, at most four experts (top-k no larger), a hidden size of at most 1024 (heads
    kept dividing it), and the same for sub-configs."""
    for name in LAYER_FIELDS:
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 2:
            _set(config, name, 2)
    layers = getattr(config, "num_hidden_layers", None)
    for name in ("layer_types", "layers_block_type"):
        kinds = getattr(config, name, None)
        if isinstance(kinds, (list, tuple)) and isinstance(layers, int) and len(kinds) > layers:
            distinct = list(dict.fromkeys(kinds))  # keep every kind of layer a hybrid needs
            if len(distinct) > layers:
                _set(config, "num_hidden_layers", len(distinct))
            _set(config, name, (distinct + distinct[-1:] * layers)[: max(layers, len(distinct))])
    if isinstance(getattr(config, "block_sizes", None), (list, tuple)):  # Funnel: blocks sum to the layers
        _set(config, "block_sizes", [1, 1])
    _shrink_width(config)
    experts = None
    for name in EXPERT_FIELDS:
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 4:
            _set(config, name, 4)
        experts = getattr(config, name, experts)
    if isinstance(experts, int):
        for name in TOP_K_FIELDS:
            value = getattr(config, name, None)
            if isinstance(value, int) and value > experts:
                _set(config, name, experts)
    for name in SUB_CONFIGS:
        sub = getattr(config, name, None)
        if sub is not None and hasattr(sub, "to_dict") and sub is not config:
            shrink(sub)
    return config


def _shrink_width(config: Any) -> None:
    hidden = getattr(config, "hidden_size", None)
    if not isinstance(hidden, int) or hidden <= MAX_HIDDEN:
        return
    factor = hidden // MAX_HIDDEN
    _set(config, "hidden_size", MAX_HIDDEN)
    intermediate = getattr(config, "intermediate_size", None)
    if isinstance(intermediate, int):
        _set(config, "intermediate_size", max(intermediate // factor, 2 * MAX_HIDDEN))
    heads = getattr(config, "num_attention_heads", None)
    if isinstance(heads, int):
        heads = max(heads // factor, 4)
        while MAX_HIDDEN % heads:
            heads -= 1
        _set(config, "num_attention_heads", heads)
        kv = getattr(config, "num_key_value_heads", None)
        if isinstance(kv, int):
            kv = min(kv, heads)
            while heads % kv:
                kv -= 1
            _set(config, "num_key_value_heads", kv)


def _set(config: Any, name: str, value: Any) -> None:
    try:
        setattr(config, name, value)
    except (AttributeError, ValueError, TypeError, NotImplementedError):
        pass  # some configs derive the field and refuse it being set


def build(name: str, mode: str = "eval") -> tuple[Any, dict[str, Any]]:
    """``(model, inputs)`` for the transformers class ``name``, in ``mode`` (``eval`` or
    ``train``; the caller runs eval under ``torch.no_grad()``)."""
    import torch
    import transformers

    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    cls = getattr(transformers, name)
    config = shrink(cls.config_class())
    torch.manual_seed(0)
    model = cls(config)
    model.train(mode == "train")
    return model, inputs_for(model, config)


def inputs_for(model: Any, config: Any) -> dict[str, Any]:
    import torch

    main = getattr(model, "main_input_name", "input_ids")
    accepts = set(inspect.signature(model.forward).parameters)
    text = getattr(config, "text_config", None) or config
    vocab = min(getattr(text, "vocab_size", None) or VOCAB_CAP, VOCAB_CAP)
    model_type = str(getattr(config, "model_type", ""))
    inputs: dict[str, Any] = {}
    if main == "input_ids":
        inputs["input_ids"] = torch.randint(0, vocab, (BATCH, TOKENS))
        if not getattr(config, "is_encoder_decoder", False) and "attention_mask" in accepts:
            inputs["attention_mask"] = torch.ones(BATCH, TOKENS, dtype=torch.long)
        if "token_type_ids" in accepts:
            inputs["token_type_ids"] = torch.zeros(BATCH, TOKENS, dtype=torch.long)
    elif main == "pixel_values":
        vision = getattr(config, "vision_config", None) or config
        size = getattr(vision, "image_size", 224)
        height, width = (size[0], size[-1]) if isinstance(size, (list, tuple)) else (size, size)
        inputs["pixel_values"] = torch.randn(BATCH, getattr(vision, "num_channels", 3), height, width)
    elif main == "input_values":
        if any(kind in model_type for kind in CODEC_TYPES):  # codecs: (batch, 1, samples)
            rate = getattr(config, "sampling_rate", None) or AUDIO_SAMPLES
            samples = -(-rate // CODEC_STRIDE) * CODEC_STRIDE
            inputs["input_values"] = torch.randn(BATCH, 1, samples)
        else:
            inputs["input_values"] = torch.randn(BATCH, AUDIO_SAMPLES)
    elif main == "input_features":
        if "whisper" in model_type:  # a full 30 s window of 80 mel bins
            inputs["input_features"] = torch.randn(BATCH, config.num_mel_bins, 2 * config.max_source_positions)
        else:
            width = getattr(config, "input_feat_per_channel", 80) * getattr(config, "input_channels", 1)
            inputs["input_features"] = torch.randn(BATCH, 100, width)
    else:
        raise ValueError(f"no inputs known for main_input_name {main!r}")
    if "decoder_input_ids" in accepts and (getattr(config, "is_encoder_decoder", False) or main != "input_ids"):
        if "whisper" in model_type:
            start = getattr(config, "decoder_start_token_id", 1) or 1
            inputs["decoder_input_ids"] = torch.full((BATCH, 1), start, dtype=torch.long)
        else:
            inputs["decoder_input_ids"] = torch.randint(0, vocab, (BATCH, TOKENS))
    return inputs
