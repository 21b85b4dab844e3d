"""The forward pass of Qwen3.5 / Qwen3-Next / Qwen3, written from the math (model-spec §3),
in float64 numpy. A Model holds the per-sequence state (K/V, conv and SSM state), so a prompt
can be prefilled in one call and generation continues token by token. MtpHead runs the
multi-token-prediction head (`mtp.*`) with its own K/V. Images (`Image`) take the place of
their pad tokens' embeddings and move the positions as Qwen3-VL's get_rope_index does.
"""
import numpy as np


def silu(x):
    return x / (1.0 + np.exp(-x))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x):
    return np.logaddexp(0.0, x)


def rms_norm(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


class Image:
    """An image in a sequence: its merged grid_h x grid_w pad tokens from row first_row on, and
    what is fed there instead of the pads' embeddings ([grid_h * grid_w, hidden])."""

    def __init__(self, first_row, grid_h, grid_w, embeddings):
        self.first_row, self.grid_h, self.grid_w = first_row, grid_h, grid_w
        self.embeddings = np.asarray(embeddings, dtype=np.float64)
        self.end_row = first_row + grid_h * grid_w


def mrope_positions(length, images):
    """The (t, h, w) positions [3, length] of rows 0..length-1 (transformers' Qwen3-VL
    get_rope_index, still images): a text run continues from the largest position so far + 1;
    an image's pads start at that position p and take (p, p + row, p + column) of its grid."""
    end = max([length] + [image.end_row for image in images])
    positions = np.zeros((3, end), dtype=np.int64)
    row, start = 0, 0
    for image in sorted(images, key=lambda i: i.first_row):
        text = image.first_row - row
        positions[:, row:image.first_row] = start + np.arange(text)
        start += text
        h, w = np.meshgrid(np.arange(image.grid_h), np.arange(image.grid_w), indexing="ij")
        block = slice(image.first_row, image.end_row)
        positions[0, block] = start
        positions[1, block] = start + h.reshape(-1)
        positions[2, block] = start + w.reshape(-1)
        start = positions[:, block].max() + 1
        row = image.end_row
    positions[:, row:] = start + np.arange(end - row)
    return positions[:, :length]


def rope(x, positions, rotary_dim, theta, sections=None, interleaved=False):
    """Rotate-half RoPE on the first rotary_dim dims. x: [T, heads, D]. positions: [T], or the
    M-RoPE [3, T] with `sections` (T, H, W frequency counts): interleaved as transformers'
    apply_interleaved_mrope (H on frequencies 1, 4, 7, ... below 3 * sections[1], W on 2, 5, ...
    below 3 * sections[2], T elsewhere), else contiguous."""
    half = rotary_dim // 2
    inv_freq = theta ** (-np.arange(half, dtype=np.float64) * 2.0 / rotary_dim)
    positions = np.asarray(positions)
    if positions.ndim == 1:
        angles = positions[:, None].astype(np.float64) * inv_freq[None, :]
    else:
        per_axis = positions[:, :, None].astype(np.float64) * inv_freq[None, None, :]
        angles = per_axis[0].copy()
        if interleaved:
            for axis in (1, 2):
                chosen = slice(axis, 3 * sections[axis], 3)
                angles[:, chosen] = per_axis[axis][:, chosen]
        else:
            t, h = sections[0], sections[1]
            angles[:, t:t + h] = per_axis[1][:, t:t + h]
            angles[:, t + h:] = per_axis[2][:, t + h:]
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    a, b = x[..., :half], x[..., half:rotary_dim]
    out = x.copy()
    out[..., :half] = a * cos - b * sin
    out[..., half:rotary_dim] = b * cos + a * sin
    return out


def gated_delta_recurrent(q, k, v, g, beta, state):
    """Per token: S <- a S; S += k (beta (v - S^T k))^T; o = S^T q. Shapes: q,k [T,Hv,Dk],
    v [T,Hv,Dv], g/beta [T,Hv], state [Hv,Dk,Dv]. Returns (o [T,Hv,Dv], state)."""
    out = np.zeros(v.shape)
    for t in range(q.shape[0]):
        state = state * np.exp(g[t])[:, None, None]
        memory = np.einsum("hkv,hk->hv", state, k[t])
        delta = beta[t][:, None] * (v[t] - memory)
        state = state + k[t][:, :, None] * delta[:, None, :]
        out[t] = np.einsum("hkv,hk->hv", state, q[t])
    return out, state


def gated_delta_chunked(q, k, v, g, beta, state, chunk=64):
    """The chunked (WY / UT) form of the same recurrence (model-spec §3.6)."""
    steps = q.shape[0]
    pad = (-steps) % chunk
    if pad:
        q, k, v = (np.concatenate([x, np.zeros((pad,) + x.shape[1:])]) for x in (q, k, v))
        g, beta = (np.concatenate([x, np.zeros((pad,) + x.shape[1:])]) for x in (g, beta))
    out = np.zeros(v.shape)
    causal = np.tril(np.ones((chunk, chunk), dtype=bool))
    strictly_lower = np.tril(np.ones((chunk, chunk), dtype=bool), -1)
    eye = np.eye(chunk)
    for h in range(q.shape[1]):
        s = state[h]
        for c0 in range(0, q.shape[0], chunk):
            qc, kc, vc = q[c0:c0 + chunk, h], k[c0:c0 + chunk, h], v[c0:c0 + chunk, h]
            gc, bc = g[c0:c0 + chunk, h], beta[c0:c0 + chunk, h]
            G = np.cumsum(gc)
            diff = np.where(causal, G[:, None] - G[None, :], -np.inf)
            decay = np.exp(diff)
            L = np.where(strictly_lower, bc[:, None] * (kc @ kc.T) * decay, 0.0)
            T = np.linalg.solve(eye + L, eye)
            U = T @ (bc[:, None] * vc)
            W = T @ (bc[:, None] * np.exp(G)[:, None] * kc)
            v_new = U - W @ s
            out[c0:c0 + chunk, h] = (np.exp(G)[:, None] * (qc @ s)
                                     + ((qc @ kc.T) * decay) @ v_new)
            s = np.exp(G[-1]) * s + (np.exp(G[-1] - G)[:, None] * kc).T @ v_new
        state[h] = s
    return out[:steps], state


class Model:
    def __init__(self, cfg, weights, gdn_form="chunked"):
        self.cfg = cfg
        self.w = weights
        self.gdn_form = gdn_form
        self.position = 0
        self.kv = {}
        self.conv_state = {}
        self.ssm_state = {}
        self.images = []  # the sequence's Images (absolute rows), set by the caller

    def p(self, layer, name):
        return self.w[f"layers.{layer}.{name}"]

    def forward(self, tokens):
        """Feeds tokens after the current position; returns logits [T, vocab]. Keeps the
        final-normed hidden rows [T, H] (the MTP head's input) in self.hidden."""
        cfg = self.cfg
        x = self.embed(tokens, self.position)
        positions = self.positions(self.position, len(tokens))
        for layer in range(cfg.layers):
            x = self.decoder_layer(layer, cfg.layer_types[layer] == "full_attention",
                                   cfg.is_moe(layer), x, positions)
        self.position += len(tokens)
        self.hidden = rms_norm(x, self.w["norm.weight"], cfg.eps)
        return self.hidden @ self.w["lm_head.weight"].T

    def embed(self, tokens, first_row):
        """Token embeddings of rows first_row.., an image's rows replaced by its embeddings."""
        x = self.shared_weights()["embed_tokens.weight"][np.asarray(tokens)].copy()
        for image in self.images:
            for row in range(max(image.first_row, first_row),
                             min(image.end_row, first_row + len(tokens))):
                x[row - first_row] = image.embeddings[row - image.first_row]
        return x

    def shared_weights(self):
        return self.w

    def positions(self, first_row, count):
        """Plain positions for text, or M-RoPE [3, count] when the sequence has images."""
        if not self.images:
            return np.arange(first_row, first_row + count)
        return mrope_positions(first_row + count, self.images)[:, first_row:]

    def decoder_layer(self, layer, full_attention, moe, x, positions):
        cfg = self.cfg
        h = rms_norm(x, self.p(layer, "input_layernorm.weight"), cfg.eps)
        if full_attention:
            x = x + self.attention(layer, h, positions)
        else:
            x = x + self.gated_delta_net(layer, h)
        h = rms_norm(x, self.p(layer, "post_attention_layernorm.weight"), cfg.eps)
        return x + (self.moe(layer, h) if moe else self.mlp(layer, "mlp.", h))

    def attention(self, layer, x, positions):
        cfg = self.cfg
        T, D = x.shape[0], cfg.head_dim
        proj = x @ self.p(layer, "self_attn.q_proj.weight").T
        if cfg.gated_attention:
            proj = proj.reshape(T, cfg.heads, 2 * D)
            q, gate = proj[..., :D], proj[..., D:].reshape(T, cfg.heads * D)
        else:
            q, gate = proj.reshape(T, cfg.heads, D), None
        k = (x @ self.p(layer, "self_attn.k_proj.weight").T).reshape(T, cfg.kv_heads, D)
        v = (x @ self.p(layer, "self_attn.v_proj.weight").T).reshape(T, cfg.kv_heads, D)
        q = rms_norm(q, self.p(layer, "self_attn.q_norm.weight"), cfg.eps)
        k = rms_norm(k, self.p(layer, "self_attn.k_norm.weight"), cfg.eps)
        sections, interleaved = cfg.mrope_section, cfg.mrope_interleaved
        q = rope(q, positions, cfg.rotary_dim, cfg.rope_theta, sections, interleaved)
        k = rope(k, positions, cfg.rotary_dim, cfg.rope_theta, sections, interleaved)
        past_k, past_v = self.kv.get(layer, (np.zeros((0, cfg.kv_heads, D)),) * 2)
        k, v = np.concatenate([past_k, k]), np.concatenate([past_v, v])
        self.kv[layer] = (k, v)
        group = cfg.heads // cfg.kv_heads
        k_heads, v_heads = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
        scores = np.einsum("thd,shd->hts", q, k_heads) / np.sqrt(D)
        # Causal over rows (not over M-RoPE positions): query row i sees rows 0..i.
        key_rows = np.arange(k.shape[0])
        query_rows = np.arange(k.shape[0] - T, k.shape[0])
        scores = np.where(key_rows[None, None, :] <= query_rows[None, :, None], scores, -np.inf)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        out = np.einsum("hts,shd->thd", probs, v_heads).reshape(T, cfg.heads * D)
        if gate is not None:
            out = out * sigmoid(gate)
        return out @ self.p(layer, "self_attn.o_proj.weight").T

    def gated_delta_net(self, layer, x):
        cfg = self.cfg
        T = x.shape[0]
        hk, hv = cfg.linear_key_heads, cfg.linear_value_heads
        dk, dv, K = cfg.linear_key_dim, cfg.linear_value_dim, cfg.conv_kernel
        a = lambda name: self.p(layer, "linear_attn." + name)
        qkv = x @ a("in_proj_qkv.weight").T
        z = (x @ a("in_proj_z.weight").T).reshape(T, hv, dv)
        b = x @ a("in_proj_b.weight").T
        a_in = x @ a("in_proj_a.weight").T
        # Causal depthwise conv: the last K-1 pre-conv rows are the conv state.
        history = self.conv_state.get(layer, np.zeros((K - 1, qkv.shape[1])))
        padded = np.concatenate([history, qkv])
        self.conv_state[layer] = padded[-(K - 1):]
        conv_w = a("conv1d.weight")  # [CD, K]; column K-1 multiplies the current token
        conv = sum(padded[j:j + T] * conv_w[:, j] for j in range(K))
        conv = silu(conv)
        key_dim = hk * dk
        q = conv[:, :key_dim].reshape(T, hk, dk)
        k = conv[:, key_dim:2 * key_dim].reshape(T, hk, dk)
        v = conv[:, 2 * key_dim:].reshape(T, hv, dv)
        q = q / np.sqrt(np.sum(q * q, axis=-1, keepdims=True) + 1e-6) / np.sqrt(dk)
        k = k / np.sqrt(np.sum(k * k, axis=-1, keepdims=True) + 1e-6)
        ratio = hv // hk  # value head h reads key head h // ratio
        q, k = np.repeat(q, ratio, axis=1), np.repeat(k, ratio, axis=1)
        beta = sigmoid(b)
        g = -np.exp(a("A_log")) * softplus(a_in + a("dt_bias"))
        state = self.ssm_state.get(layer, np.zeros((hv, dk, dv))).copy()
        if self.gdn_form == "chunked" and T > 1:
            out, state = gated_delta_chunked(q, k, v, g, beta, state)
        else:
            out, state = gated_delta_recurrent(q, k, v, g, beta, state)
        self.ssm_state[layer] = state
        out = rms_norm(out, a("norm.weight"), cfg.eps) * silu(z)
        return out.reshape(T, hv * dv) @ a("out_proj.weight").T

    def mlp(self, layer, prefix, x):
        gate = x @ self.p(layer, prefix + "gate_proj.weight").T
        up = x @ self.p(layer, prefix + "up_proj.weight").T
        return (silu(gate) * up) @ self.p(layer, prefix + "down_proj.weight").T

    def moe(self, layer, x):
        cfg = self.cfg
        logits = x @ self.p(layer, "mlp.gate.weight").T
        probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        chosen = np.argsort(-probs, axis=-1, kind="stable")[:, :cfg.top_k]
        weights = np.take_along_axis(probs, chosen, axis=-1)
        if cfg.renormalize:
            weights = weights / weights.sum(axis=-1, keepdims=True)
        gate_w = self.p(layer, "mlp.experts.gate_proj")
        up_w = self.p(layer, "mlp.experts.up_proj")
        down_w = self.p(layer, "mlp.experts.down_proj")
        out = np.zeros_like(x)
        for e in np.unique(chosen):
            rows, slots = np.nonzero(chosen == e)
            h = silu(x[rows] @ gate_w[e].T) * (x[rows] @ up_w[e].T)
            out[rows] += weights[rows, slots][:, None] * (h @ down_w[e].T)
        shared = self.mlp(layer, "mlp.shared_expert.", x)
        shared_gate = sigmoid(x @ self.p(layer, "mlp.shared_expert_gate.weight").T)
        return out + shared_gate * shared


class MtpHead(Model):
    """The MTP head (vLLM qwen3_next_mtp.py / qwen3_5_mtp.py): for the main model's final-normed
    hidden state at position p and the token at p + 1,
        x = fc([rms(embed(token)) * w_e | rms(hidden) * w_h]);  x = layer(x) at position p;
        logits = lm_head(rms(x) * w_norm)
    where the layer is full attention with layer 0's feed-forward kind and its own K/V."""

    def __init__(self, cfg, weights):
        mtp = {name[len("mtp."):]: a for name, a in weights.items() if name.startswith("mtp.")}
        super().__init__(cfg, mtp)
        self.shared = weights

    def shared_weights(self):
        return self.shared

    def forward(self, hidden, next_tokens):
        """Rows (hidden [T, H], next_tokens [T]) at the next T positions; returns logits. With
        images, row p is at the main model's position of row p and a next token that is an
        image pad is fed that image's embedding row p + 1, as the main model was."""
        cfg, w = self.cfg, self.w
        e = rms_norm(self.embed(next_tokens, self.position + 1),
                     w["pre_fc_norm_embedding.weight"], cfg.eps)
        h = rms_norm(np.asarray(hidden), w["pre_fc_norm_hidden.weight"], cfg.eps)
        x = np.concatenate([e, h], axis=-1) @ w["fc.weight"].T
        positions = self.positions(self.position, len(next_tokens))
        x = self.decoder_layer(0, True, cfg.is_moe(0), x, positions)
        self.position += len(next_tokens)
        return rms_norm(x, w["norm.weight"], cfg.eps) @ self.shared["lm_head.weight"].T
