"""The Qwen3.5 vision tower in float64 numpy, written from the math (transformers'
Qwen3_5VisionModel: Qwen3-VL's vision model without DeepStack). Shares no code with the
engine; reads config.json's vision_config and the `model.visual.*` tensors itself.

    tower = VisionTower(model_dir)
    out = tower.encode(pixel_values, (t, h, w))   # [t*h*w // 4, out_hidden_size]

pixel_values rows are in the processor's order: per frame, the 2x2 patches that merge into one
token are consecutive and the merge blocks run in raster order; a row is one 16x16 patch as
(channel, temporal copy, patch row, patch column).
"""
import json
import math
import os

import numpy as np

import safetensors_np

_ROOTS = ("model.visual.", "visual.")
_LAYER_NORM_EPS = 1e-6
_ROPE_THETA = 10000.0


def layer_norm(x, weight, bias):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + _LAYER_NORM_EPS) * weight + bias


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


_erf = np.vectorize(math.erf)


def gelu_erf(x):
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


class VisionTower:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)["vision_config"]
        self.depth = cfg["depth"]
        self.hidden = cfg["hidden_size"]
        self.heads = cfg["num_heads"]
        self.merge = cfg["spatial_merge_size"]
        self.side = int(round(math.sqrt(cfg["num_position_embeddings"])))
        self.mlp_act = {"gelu_pytorch_tanh": gelu_tanh, "gelu": gelu_erf}[cfg["hidden_act"]]
        raw = safetensors_np.read_model(model_dir)
        root = next(r for r in _ROOTS if any(n.startswith(r) for n in raw))
        self.w = {n[len(root):]: a.astype(np.float64) for n, a in raw.items() if n.startswith(root)}

    def linear(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def norm(self, x, name):
        return layer_norm(x, self.w[name + ".weight"], self.w[name + ".bias"])

    def patch_raster_index(self, h, w):
        """For each row of a frame in processor order, its index in the raster h x w grid."""
        m = self.merge
        return np.arange(h * w).reshape(h // m, m, w // m, m).transpose(0, 2, 1, 3).reshape(-1)

    def position_embeddings(self, h, w):
        """The side x side table bilinearly resized to h x w, corners aligned; raster order."""
        table = self.w["pos_embed.weight"].reshape(self.side, self.side, -1)
        ys, xs = np.linspace(0, self.side - 1, h), np.linspace(0, self.side - 1, w)
        y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
        y1, x1 = np.minimum(y0 + 1, self.side - 1), np.minimum(x0 + 1, self.side - 1)
        dy, dx = (ys - y0)[:, None, None], (xs - x0)[None, :, None]
        grid = ((1 - dy) * (1 - dx) * table[y0][:, x0] + (1 - dy) * dx * table[y0][:, x1]
                + dy * (1 - dx) * table[y1][:, x0] + dy * dx * table[y1][:, x1])
        return grid.reshape(h * w, -1)

    def rotary(self, rows, cols):
        """cos, sin [n, head_dim] of the 2D rotary: half the angles from the row, half from
        the column, each over head_dim / 4 frequencies of a head_dim / 2 rotary table."""
        dim = self.hidden // self.heads // 2
        inv_freq = 1.0 / _ROPE_THETA ** (np.arange(0, dim, 2) / dim)
        angles = np.concatenate([np.outer(rows, inv_freq), np.outer(cols, inv_freq)], axis=1)
        emb = np.concatenate([angles, angles], axis=1)
        return np.cos(emb), np.sin(emb)

    def attention(self, x, b, cos, sin, frames):
        n = x.shape[0]
        d = self.hidden // self.heads
        qkv = self.linear(x, f"blocks.{b}.attn.qkv").reshape(n, 3, self.heads, d)
        q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]  # [n, heads, d]
        q = q * cos[:, None] + rotate_half(q) * sin[:, None]
        k = k * cos[:, None] + rotate_half(k) * sin[:, None]
        out = np.empty_like(q)
        for f in np.split(np.arange(n), frames):  # no attention across frames
            scores = np.einsum("qhd,khd->hqk", q[f], k[f]) / math.sqrt(d)
            p = np.exp(scores - scores.max(axis=-1, keepdims=True))
            p /= p.sum(axis=-1, keepdims=True)
            out[f] = np.einsum("hqk,khd->qhd", p, v[f])
        return self.linear(out.reshape(n, -1), f"blocks.{b}.attn.proj")

    def encode(self, pixel_values, grid):
        t, h, w = grid
        conv = self.w["patch_embed.proj.weight"]  # Conv3d [hidden, C, T, P, P], stride = kernel
        patches = np.asarray(pixel_values, dtype=np.float64).reshape(-1, *conv.shape[1:])
        x = np.einsum("nctyx,hctyx->nh", patches, conv) + self.w["patch_embed.proj.bias"]
        raster = np.tile(self.patch_raster_index(h, w), t)
        x = x + self.position_embeddings(h, w)[raster]
        cos, sin = self.rotary(raster // w, raster % w)
        for b in range(self.depth):
            x = x + self.attention(self.norm(x, f"blocks.{b}.norm1"), b, cos, sin, t)
            u = self.linear(self.norm(x, f"blocks.{b}.norm2"), f"blocks.{b}.mlp.linear_fc1")
            x = x + self.linear(self.mlp_act(u), f"blocks.{b}.mlp.linear_fc2")
        merged = self.norm(x, "merger.norm").reshape(x.shape[0] // self.merge ** 2, -1)
        u = gelu_erf(self.linear(merged, "merger.linear_fc1"))
        return self.linear(u, "merger.linear_fc2")
