#include "kernels/gated_delta.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/vec.h"

namespace qmlx {
namespace {

struct HeadView {
  const GatedDeltaInputs& in;
  int h;
  const float* q(int t) const { return in.q + t * in.row_stride + (h / ratio()) * in.Dk; }
  const float* k(int t) const { return in.k + t * in.row_stride + (h / ratio()) * in.Dk; }
  const float* v(int t) const { return in.v + t * in.row_stride + size_t(h) * in.Dv; }
  float g(int t) const { return in.g[size_t(t) * in.Hv + h]; }
  float beta(int t) const { return in.beta[size_t(t) * in.Hv + h]; }
  float* out(float* base, int t) const { return base + (size_t(t) * in.Hv + h) * in.Dv; }
  int ratio() const { return in.Hv / in.Hk; }
};

void recurrent_head(const HeadView& hv, float* S, float* out) {
  const int Dk = hv.in.Dk, Dv = hv.in.Dv;
  for (int t = 0; t < hv.in.T; ++t) {
    const float alpha = std::exp(hv.g(t)), beta = hv.beta(t);
    const float *k = hv.k(t), *q = hv.q(t), *v = hv.v(t);
    float* o = hv.out(out, t);
    for (int j = 0; j < Dv; ++j) {
      float* row = S + size_t(j) * Dk;  // column j of S
      vec::scale(row, alpha, Dk);
      float delta = beta * (v[j] - vec::dot(row, k, Dk));
      vec::axpy(row, delta, k, Dk);
      o[j] = vec::dot(row, q, Dk);
    }
  }
}

// Scratch for one chunk of one head; n <= C rows.
struct ChunkScratch {
  std::vector<float> G, L, Tm, U, W, Vp, qk;
  explicit ChunkScratch(int C, int Dk, int Dv)
      : G(C), L(C * C), Tm(C * C), U(C * Dv), W(C * Dk), Vp(C * Dv), qk(C * C) {}
};

void chunk_head(const HeadView& hv, int t0, int n, float* S, float* out, ChunkScratch& s) {
  const int Dk = hv.in.Dk, Dv = hv.in.Dv, C = kGatedDeltaChunk;
  // 1. Inclusive cumulative log-decay.
  float acc = 0.f;
  for (int i = 0; i < n; ++i) s.G[i] = acc += hv.g(t0 + i);
  // 2. L[i][j] = beta_i (k_i . k_j) exp(G_i - G_j), j < i.
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < i; ++j)
      s.L[i * C + j] =
          hv.beta(t0 + i) * vec::dot(hv.k(t0 + i), hv.k(t0 + j), Dk) * std::exp(s.G[i] - s.G[j]);
  // 3. T = (I + L)^-1 by forward substitution (unit lower triangular).
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < i; ++j) {
      float sum = 0.f;
      for (int m = j; m < i; ++m) sum += s.L[i * C + m] * s.Tm[m * C + j];
      s.Tm[i * C + j] = -sum;
    }
    s.Tm[i * C + i] = 1.f;
  }
  // 4. U = T (beta V), W = T (beta exp(G) K).
  for (int i = 0; i < n; ++i) {
    float* u = &s.U[i * Dv];
    float* w = &s.W[i * Dk];
    std::fill(u, u + Dv, 0.f);
    std::fill(w, w + Dk, 0.f);
    for (int j = 0; j <= i; ++j) {
      float tb = s.Tm[i * C + j] * hv.beta(t0 + j);
      vec::axpy(u, tb, hv.v(t0 + j), Dv);
      vec::axpy(w, tb * std::exp(s.G[j]), hv.k(t0 + j), Dk);
    }
  }
  // 5. V' = U - W S  ((W S)[i][c] = W_i . column c of S = W_i . S[c] in our layout).
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < Dv; ++c)
      s.Vp[i * Dv + c] = s.U[i * Dv + c] - vec::dot(&s.W[i * Dk], S + size_t(c) * Dk, Dk);
  // 6. O_i = exp(G_i) q_i^T S + sum_{j<=i} (q_i . k_j) exp(G_i - G_j) V'_j.
  for (int i = 0; i < n; ++i) {
    float* o = hv.out(out, t0 + i);
    const float* q = hv.q(t0 + i);
    float decay = std::exp(s.G[i]);
    for (int c = 0; c < Dv; ++c) o[c] = decay * vec::dot(q, S + size_t(c) * Dk, Dk);
    for (int j = 0; j <= i; ++j)
      vec::axpy(o, vec::dot(q, hv.k(t0 + j), Dk) * std::exp(s.G[i] - s.G[j]), &s.Vp[j * Dv], Dv);
  }
  // 7. S <- exp(G_last) S + sum_j exp(G_last - G_j) k_j V'_j^T.
  const float G_last = s.G[n - 1];
  for (int c = 0; c < Dv; ++c) {
    float* row = S + size_t(c) * Dk;
    vec::scale(row, std::exp(G_last), Dk);
    for (int j = 0; j < n; ++j)
      vec::axpy(row, std::exp(G_last - s.G[j]) * s.Vp[j * Dv + c], hv.k(t0 + j), Dk);
  }
}

void chunked_head(const HeadView& hv, float* S, float* out) {
  ChunkScratch scratch(kGatedDeltaChunk, hv.in.Dk, hv.in.Dv);
  for (int t0 = 0; t0 < hv.in.T; t0 += kGatedDeltaChunk)
    chunk_head(hv, t0, std::min(kGatedDeltaChunk, hv.in.T - t0), S, out, scratch);
}

template <typename HeadFn>
void for_each_head(const GatedDeltaInputs& in, float* state, float* out, HeadFn fn) {
  const size_t head_state = size_t(in.Dv) * in.Dk;
  default_pool().parallel_for(in.Hv, [&](size_t b, size_t e) {
    for (size_t h = b; h < e; ++h) fn(HeadView{in, int(h)}, state + h * head_state, out);
  });
}

}  // namespace

void gated_delta_recurrent(const GatedDeltaInputs& in, float* state, float* out) {
  for_each_head(in, state, out, recurrent_head);
}

void gated_delta_chunked(const GatedDeltaInputs& in, float* state, float* out) {
  for_each_head(in, state, out, chunked_head);
}

}  // namespace qmlx
