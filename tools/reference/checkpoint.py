"""Turns a Qwen3.5 / Qwen3-Next / Qwen3 checkpoint (Hugging Face or MLX layout, float or MLX
affine-quantized) into one canonical set of float64 numpy weights for forward.py.

Canonical names are the HF names without prefix; an MTP head (HF `mtp.*`, MLX
`language_model.mtp.*`, or `model.mtp.*`) becomes `mtp.*` with its layer stored like the others.
Every Gated DeltaNet gets in_proj_qkv /
in_proj_z / in_proj_b / in_proj_a, conv1d becomes [CD, K], experts are stacked
experts.{gate,up,down}_proj [E, out, in], and every norm holds the multiplier it applies
(1 + w for the raw zero-centred norms of HF Qwen3.5 / Qwen3-Next files).
"""
import json
import os
import re

import numpy as np

import safetensors_np

_PREFIXES = ("model.language_model.", "language_model.model.", "model.")
_SKIPPED = ("model.visual.", "visual.", "vision_tower.")
_MTP_ROOTS = ("mtp.", "language_model.mtp.", "model.mtp.")
_ZERO_CENTRED = ("input_layernorm.weight", "post_attention_layernorm.weight",
                 "q_norm.weight", "k_norm.weight")


class Config:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            raw = json.load(f)
        self.raw = raw
        text = dict(raw)
        text.update(raw.get("text_config", {}))
        self.model_type = raw["model_type"]
        g = text.get
        self.hidden = g("hidden_size")
        self.layers = g("num_hidden_layers")
        self.heads = g("num_attention_heads")
        self.kv_heads = g("num_key_value_heads")
        self.head_dim = g("head_dim") or self.hidden // self.heads
        self.vocab = g("vocab_size")
        self.eps = g("rms_norm_eps", 1e-6)
        self.tie = raw.get("tie_word_embeddings", g("tie_word_embeddings", False))
        rope = g("rope_parameters") or {}
        self.rope_theta = rope.get("rope_theta", g("rope_theta", 10000.0))
        partial = rope.get("partial_rotary_factor", g("partial_rotary_factor"))
        if partial is None:
            partial = 0.25 if self.model_type.startswith("qwen3_5") else 1.0
        self.rotary_dim = int(self.head_dim * partial)
        # Multimodal RoPE (Qwen3.5): frequencies per T/H/W section, interleaved or contiguous.
        self.mrope_section = rope.get("mrope_section")
        self.mrope_interleaved = bool(rope.get("mrope_interleaved", False))
        self.image_token_id = raw.get("image_token_id")
        self.hybrid = self.model_type != "qwen3"
        self.gated_attention = self.hybrid
        self.zero_centred = self.hybrid
        interval = g("full_attention_interval", 4)
        types = g("layer_types")
        if types is None:
            types = ["full_attention" if not self.hybrid or (i + 1) % interval == 0
                     else "linear_attention" for i in range(self.layers)]
        self.layer_types = types
        self.linear_key_heads = g("linear_num_key_heads")
        self.linear_value_heads = g("linear_num_value_heads")
        self.linear_key_dim = g("linear_key_head_dim")
        self.linear_value_dim = g("linear_value_head_dim")
        self.conv_kernel = g("linear_conv_kernel_dim", 4)
        self.experts = g("num_experts", 0) or 0
        self.top_k = g("num_experts_per_tok", 0)
        self.renormalize = self.model_type == "qwen3_5_moe" or g("norm_topk_prob", False)
        self.mlp_only_layers = g("mlp_only_layers", []) or []
        self.sparse_step = g("decoder_sparse_step", 1) or 1
        self.quantization = raw.get("quantization") or raw.get("quantization_config")

    def is_moe(self, layer):
        if self.experts == 0:
            return False
        if self.model_type == "qwen3_5_moe":
            return True
        return layer not in self.mlp_only_layers and (layer + 1) % self.sparse_step == 0


def unpack_bits(packed, bits, columns):
    """LSB-first bit stream per row: element c is bits [c*bits, (c+1)*bits)."""
    lead = packed.shape[:-1]
    as_bytes = np.ascontiguousarray(packed).view(np.uint8).reshape(*lead, -1)
    bit_stream = np.unpackbits(as_bytes, axis=-1, bitorder="little")
    groups = bit_stream[..., :columns * bits].reshape(*lead, columns, bits).astype(np.uint32)
    return (groups << np.arange(bits, dtype=np.uint32)).sum(axis=-1)


def _dequantize(weight, scales, biases, params):
    group = params["group_size"]
    columns = scales.shape[-1] * group
    bits = params["bits"]
    if weight.shape[-1] * 32 != columns * bits:
        raise ValueError(f"quantized shape {weight.shape} does not match bits {bits}")
    q = unpack_bits(weight, bits, columns).astype(np.float64)
    q = q.reshape(*q.shape[:-1], scales.shape[-1], group)
    w = q * scales.astype(np.float64)[..., None] + biases.astype(np.float64)[..., None]
    return w.reshape(*w.shape[:-2], columns)


def _dequantize_all(raw, quantization):
    out = {}
    for name, array in raw.items():
        if name.endswith(".scales") or name.endswith(".biases"):
            continue
        base = name[:-len(".weight")] if name.endswith(".weight") else None
        if base is not None and base + ".scales" in raw:
            params = quantization.get(base, quantization)
            if not isinstance(params, dict):
                params = quantization
            out[name] = _dequantize(array, raw[base + ".scales"], raw[base + ".biases"], params)
        else:
            out[name] = array.astype(np.float64)
    return out


def _strip_prefix(name):
    for root in _MTP_ROOTS:
        if name.startswith(root):
            return "mtp." + name[len(root):]
    if name in ("lm_head.weight", "language_model.lm_head.weight"):
        return "lm_head.weight"
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    raise ValueError(f"unexpected tensor name {name}")


def _deinterleave_next(w, cfg, layer):
    """Qwen3-Next in_proj_qkvz / in_proj_ba -> Qwen3.5 in_proj_qkv, z, b, a."""
    p = f"layers.{layer}.linear_attn."
    hk, dk, dv = cfg.linear_key_heads, cfg.linear_key_dim, cfg.linear_value_dim
    r = cfg.linear_value_heads // hk
    qkvz = w.pop(p + "in_proj_qkvz.weight").reshape(hk, 2 * dk + 2 * r * dv, -1)
    q = qkvz[:, :dk]
    k = qkvz[:, dk:2 * dk]
    v = qkvz[:, 2 * dk:2 * dk + r * dv]
    z = qkvz[:, 2 * dk + r * dv:]
    hidden = qkvz.shape[-1]
    w[p + "in_proj_qkv.weight"] = np.concatenate(
        [q.reshape(-1, hidden), k.reshape(-1, hidden), v.reshape(-1, hidden)])
    w[p + "in_proj_z.weight"] = z.reshape(-1, hidden)
    ba = w.pop(p + "in_proj_ba.weight").reshape(hk, 2 * r, -1)
    w[p + "in_proj_b.weight"] = ba[:, :r].reshape(-1, hidden)
    w[p + "in_proj_a.weight"] = ba[:, r:].reshape(-1, hidden)


def _stack_experts(w, layer, n_experts, root=""):
    p = f"{root}layers.{layer}.mlp."
    if p + "experts.gate_up_proj" in w:  # Qwen3.5-MoE HF: fused [E, 2I, H]
        gate_up = w.pop(p + "experts.gate_up_proj")
        half = gate_up.shape[1] // 2
        w[p + "experts.gate_proj"] = gate_up[:, :half]
        w[p + "experts.up_proj"] = gate_up[:, half:]
        w[p + "experts.down_proj"] = w.pop(p + "experts.down_proj")
    elif p + "switch_mlp.gate_proj.weight" in w:  # MLX
        for proj in ("gate_proj", "up_proj", "down_proj"):
            w[p + "experts." + proj] = w.pop(p + f"switch_mlp.{proj}.weight")
    else:  # per expert
        for proj in ("gate_proj", "up_proj", "down_proj"):
            w[p + "experts." + proj] = np.stack(
                [w.pop(p + f"experts.{e}.{proj}.weight") for e in range(n_experts)])


def load(model_dir):
    cfg = Config(model_dir)
    raw = safetensors_np.read_model(model_dir)
    raw = {n: a for n, a in raw.items() if not n.startswith(_SKIPPED)}
    quantization = cfg.quantization or {}
    dense = _dequantize_all(raw, quantization)
    w = {_strip_prefix(n): a for n, a in dense.items()}
    hf_layout = None
    for layer in range(cfg.layers):
        conv_name = f"layers.{layer}.linear_attn.conv1d.weight"
        if conv_name in w:
            conv = w[conv_name]
            hf_layout = conv.shape[1] == 1 and conv.shape[2] != 1
            w[conv_name] = conv[:, 0, :] if hf_layout else conv[:, :, 0]
        if cfg.model_type == "qwen3_next" and cfg.layer_types[layer] == "linear_attention":
            _deinterleave_next(w, cfg, layer)
        if cfg.is_moe(layer):
            _stack_experts(w, layer, cfg.experts)
    if "mtp.fc.weight" in w and cfg.is_moe(0):  # the MTP layer has layer 0's feed-forward kind
        _stack_experts(w, 0, cfg.experts, root="mtp.")
    mtp_norms = ("mtp.pre_fc_norm_embedding.weight", "mtp.pre_fc_norm_hidden.weight",
                 "mtp.norm.weight")
    if cfg.zero_centred and hf_layout:
        for name in list(w):
            if (name in ("norm.weight",) + mtp_norms
                    or (name.endswith(_ZERO_CENTRED) and "linear_attn" not in name)):
                w[name] = 1.0 + w[name]
    if "lm_head.weight" not in w or cfg.tie:
        w["lm_head.weight"] = w["embed_tokens.weight"]
    return cfg, w
