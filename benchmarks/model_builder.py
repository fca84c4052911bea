"""Small Hugging Face models built from their configs (no weights), and inputs that fit them.

Graph breaks come from the code a model runs, not from its width or depth, so every config is
shrunk to two layers, a small vocabulary and few experts before the model is built; inputs are
made from the model's ``main_input_name`` and the config's own sizes. Used by
``break_corpus.py``; imports torch and transformers only when called.
"""

from __future__ import annotations

from typing import Any

SEQUENCE = 16
AUDIO_SAMPLES = 16000
CODEC_SAMPLES = 4800

# Size fields that are safe to cut down on any config that has them (ints only).
LAYER_FIELDS = (
    "num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers", "decoder_layers",
    "num_encoder_layers", "num_decoder_layers",
)
EXPERT_FIELDS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
TOP_K_FIELDS = ("num_experts_per_tok", "top_k", "moe_topk", "num_selected_experts")
SUB_CONFIGS = ("text_config", "vision_config", "audio_config", "encoder", "decoder", "speech_config")


def shrink(config: Any) -> Any:
    """Two layers, at most four experts (top-k no larger), and the same for sub-configs."""
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


def _set(config: Any, name: str, value: Any) -> None:
    try:
        setattr(config, name, value)
    except (AttributeError, ValueError, TypeError, NotImplementedError):
        pass  # some configs derive the field and refuse it being set


def build(name: str) -> tuple[Any, dict[str, Any]]:
    """``(model, inputs)`` for the transformers class ``name``, in eval mode."""
    import torch
    import transformers

    cls = getattr(transformers, name)
    config = shrink(cls.config_class())
    torch.manual_seed(0)
    model = cls(config).eval()
    return model, inputs_for(model, config)


def inputs_for(model: Any, config: Any) -> dict[str, Any]:
    import torch

    main = getattr(model, "main_input_name", "input_ids")
    text = getattr(config, "text_config", None) or config
    vocab = getattr(text, "vocab_size", None) or 100
    ids = torch.randint(3, min(vocab, 100), (1, SEQUENCE))
    inputs: dict[str, Any] = {}
    if main == "input_ids":
        inputs["input_ids"] = ids
    elif main == "pixel_values":
        vision = getattr(config, "vision_config", None) or config
        size = getattr(vision, "image_size", 64)
        size = size[0] if isinstance(size, (list, tuple)) else size
        inputs["pixel_values"] = torch.randn(1, getattr(vision, "num_channels", 3), size, size)
    elif main == "input_values":
        channels = getattr(config, "audio_channels", None)
        if channels is not None:  # codecs: (batch, channels, samples)
            inputs["input_values"] = torch.randn(1, channels, CODEC_SAMPLES)
        else:
            inputs["input_values"] = torch.randn(1, AUDIO_SAMPLES)
    elif main == "input_features":
        if hasattr(config, "num_mel_bins") and hasattr(config, "max_source_positions"):
            inputs["input_features"] = torch.randn(1, config.num_mel_bins, 2 * config.max_source_positions)
        else:
            width = getattr(config, "input_feat_per_channel", 80) * getattr(config, "input_channels", 1)
            inputs["input_features"] = torch.randn(1, 64, width)
    else:
        raise ValueError(f"no inputs known for main_input_name {main!r}")
    if getattr(config, "is_encoder_decoder", False):
        inputs["decoder_input_ids"] = ids[:, : SEQUENCE // 2]
    return inputs
