// Full attention (model-spec §3.3): q_proj rows are per head [q_h | gate_h] when gated
// (Qwen3.5 / Qwen3-Next) and plain q_h otherwise (Qwen3). q and k are RMS-normalised per head,
// partially rotated, K/V appended to the cache, then causal GQA attention over the cache and,
// when gated, o * sigmoid(gate) before o_proj.
#include <cmath>
#include <vector>

#include "kernels/activations.h"
#include "kernels/attention.h"
#include "kernels/kv_row.h"
#include "kernels/matmul.h"
#include "kernels/norms.h"
#include "model/layers.h"

namespace qmlx {

void attention_layer(const AttentionWeights& w, const ModelConfig& c, const float* x, int T,
                     const AttentionContext& ctx, KvCache& cache, float* out) {
  const int Nh = c.num_heads, Nkv = c.num_kv_heads, D = c.head_dim;
  const bool gated = c.hybrid();
  const int q_width = w.q.rows;  // Nh*D, or Nh*2D when gated
  std::vector<float> projected(size_t(T) * q_width), q(size_t(T) * Nh * D),
      gate(gated ? size_t(T) * Nh * D : 0), k(size_t(T) * Nkv * D), v(size_t(T) * Nkv * D);
  matmul(x, T, w.q, projected.data());
  matmul(x, T, w.k, k.data());
  matmul(x, T, w.v, v.data());

  cache.ensure_rows(ctx.position + T, ctx.kv_row_bytes);
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < Nh; ++h) {
      const float* src = projected.data() + size_t(t) * q_width + size_t(h) * (gated ? 2 * D : D);
      float* qh = q.data() + (size_t(t) * Nh + h) * D;
      rms_norm(src, w.q_norm.data(), D, c.rms_norm_eps, qh);
      if (gated) std::copy(src + D, src + 2 * D, gate.data() + (size_t(t) * Nh + h) * D);
    }
    float* kt = k.data() + size_t(t) * Nkv * D;
    for (int h = 0; h < Nkv; ++h)
      rms_norm(kt + h * D, w.k_norm.data(), D, c.rms_norm_eps, kt + h * D);
    apply_rope(q.data() + size_t(t) * Nh * D, Nh, D, c.rotary_dim, (*ctx.angles)[t]);
    apply_rope(kt, Nkv, D, c.rotary_dim, (*ctx.angles)[t]);
    const size_t row = size_t(ctx.position + t) * ctx.kv_row_bytes;
    const size_t head_bytes = kv_head_bytes(ctx.kv_type, D);
    for (int h = 0; h < Nkv; ++h) {
      store_kv_head(kt + h * D, D, ctx.kv_type, cache.k.data() + row + h * head_bytes);
      store_kv_head(v.data() + (size_t(t) * Nkv + h) * D, D, ctx.kv_type,
                    cache.v.data() + row + h * head_bytes);
    }
  }

  AttentionShape shape{T, Nh, Nkv, D, ctx.position, 1.f / std::sqrt(float(D))};
  shape.generated = T == 1;  // the rule before row kinds (kernels/matmul.h kRowsByCount)
  std::vector<float> o(size_t(T) * Nh * D);
  attention(shape, q.data(), cache.k.data(), cache.v.data(), ctx.kv_type, o.data());
  if (gated)
    for (size_t i = 0; i < o.size(); ++i) o[i] *= sigmoid(gate[i]);
  matmul(o.data(), T, w.o, out);
}

void KvCache::ensure_rows(int64_t rows, size_t row_bytes) {
  size_t need = size_t(rows) * row_bytes;
  if (k.size() >= need) return;
  size_t grown = std::max(need, k.size() * 3 / 2);
  k.resize(grown);
  v.resize(grown);
}

}  // namespace qmlx
