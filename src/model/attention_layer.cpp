// Full attention (model-spec §3.3): q_proj rows are per head [q_h | gate_h] when gated
// (Qwen3.5 / Qwen3-Next) and plain q_h otherwise (Qwen3). q and k are RMS-normalised per head,
// partially rotated, K/V appended to the cache, then causal GQA attention over the cache and,
// when gated, o * sigmoid(gate) before o_proj. The projections run over all rows of the batch;
// the K/V append and the attention per sequence, over that sequence's own cache.
#include <algorithm>
#include <cmath>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/activations.h"
#include "kernels/attention.h"
#include "kernels/kv_row.h"
#include "kernels/matmul.h"
#include "kernels/norms.h"
#include "model/layers.h"

namespace qmlx {
namespace {

// Appends one sequence's K/V rows [count][Nkv][D] at its positions, in its state's row type.
void append_kv(const SequenceRows& s, const float* k, const float* v, int Nkv, int D,
               KvCache& cache) {
  const ModelState& state = *s.state;
  cache.ensure_rows(s.position + s.count, state.kv_row_bytes);
  const size_t head_bytes = kv_head_bytes(state.kv_type, D);
  for (int t = 0; t < s.count; ++t) {
    const size_t row = size_t(s.position + t) * state.kv_row_bytes;
    for (int h = 0; h < Nkv; ++h) {
      const size_t in = (size_t(t) * Nkv + h) * D;
      store_kv_head(k + in, D, state.kv_type, cache.k.data() + row + h * head_bytes);
      store_kv_head(v + in, D, state.kv_type, cache.v.data() + row + h * head_bytes);
    }
  }
}

}  // namespace

void attention_layer(const AttentionWeights& w, const ModelConfig& c, const float* x,
                     const RaggedRows& rows, size_t slot, float* out) {
  const int Nh = c.num_heads, Nkv = c.num_kv_heads, D = c.head_dim;
  const int T = rows.total, G = rows.generated;
  const bool gated = c.hybrid();
  const int q_width = w.q.rows;  // Nh*D, or Nh*2D when gated
  std::vector<float> projected(size_t(T) * q_width), q(size_t(T) * Nh * D),
      gate(gated ? size_t(T) * Nh * D : 0), k(size_t(T) * Nkv * D), v(size_t(T) * Nkv * D);
  const MatmulOutput projections[] = {{&w.q, projected.data()}, {&w.k, k.data()}, {&w.v, v.data()}};
  matmul_many(x, T, projections, G);

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
    apply_rope(q.data() + size_t(t) * Nh * D, Nh, D, c.rotary_dim, rows.angles[t]);
    apply_rope(kt, Nkv, D, c.rotary_dim, rows.angles[t]);
  }

  std::vector<float> o(size_t(T) * Nh * D);
  auto attend = [&](const SequenceRows& s) {
    KvCache& cache = s.state->kv[slot];
    const size_t kv_offset = size_t(s.first) * Nkv * D, q_offset = size_t(s.first) * Nh * D;
    append_kv(s, k.data() + kv_offset, v.data() + kv_offset, Nkv, D, cache);
    AttentionShape shape{s.count, Nh, Nkv, D, s.position, 1.f / std::sqrt(float(D))};
    shape.generated = s.kind == RowKind::kGenerated;
    attention(shape, q.data() + q_offset, cache.k.data(), cache.v.data(), s.state->kv_type,
              o.data() + q_offset);
  };
  // The decode kernel spreads one sequence's rows over its KV heads only (2 on the small
  // models), so with more decoding sequences than that the sequences run in parallel instead,
  // each on one thread; a row's arithmetic is the same either way. Generated sequences come
  // last (prompt rows first).
  const auto& seqs = rows.sequences;
  const size_t first_generated =
      size_t(std::find_if(seqs.begin(), seqs.end(),
                          [](const SequenceRows& s) { return s.kind == RowKind::kGenerated; }) -
             seqs.begin());
  const size_t generated_sequences = seqs.size() - first_generated;
  if (generated_sequences <= size_t(Nkv)) {
    for (const SequenceRows& s : seqs) attend(s);
  } else {
    for (size_t i = 0; i < first_generated; ++i) attend(seqs[i]);
    default_pool().parallel_chunks(generated_sequences, 1, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) attend(seqs[first_generated + i]);
    });
  }
  if (gated)
    for (size_t i = 0; i < o.size(); ++i) o[i] *= sigmoid(gate[i]);
  matmul(o.data(), T, w.o, out, G);
}

void KvCache::ensure_rows(int64_t rows, size_t row_bytes) {
  size_t need = size_t(rows) * row_bytes;
  if (k.size() >= need) return;
  size_t grown = std::max(need, k.size() * 3 / 2);
  k.resize(grown);
  v.resize(grown);
}

}  // namespace qmlx
