#include "kernels/gated_delta.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/register_tile.h"
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

int padded(int n) { return (n + kTileCols - 1) / kTileCols * kTileCols; }

// Scratch for the chunks of one head. Matrices whose rows feed the register tile as its
// 16-wide operand are padded with zero columns to a multiple of 16 (Dkp, Dvp; the chunk
// length C already is one), so any head size works and the padding contributes exact zeros.
struct ChunkScratch {
  int Dkp, Dvp;
  std::vector<float> G, Tm, Q, K, Kt, KK, QK, Bv, Bk, U, W, St, Vp, O, A, Sp;
  ChunkScratch(int C, int Dk, int Dv)
      : Dkp(padded(Dk)),
        Dvp(padded(Dv)),
        G(C),
        Tm(size_t(C) * C),
        Q(size_t(C) * Dkp),
        K(size_t(C) * Dkp),
        Kt(size_t(Dkp) * C),
        KK(size_t(C) * C),
        QK(size_t(C) * C),
        Bv(size_t(C) * Dvp),
        Bk(size_t(C) * Dkp),
        U(size_t(C) * Dvp),
        W(size_t(C) * Dkp),
        St(size_t(Dkp) * Dvp),
        Vp(size_t(C) * Dvp),
        O(size_t(C) * Dvp),
        A(size_t(Dvp) * C),
        Sp(size_t(Dvp) * Dkp) {}
};

// One chunk of n <= C tokens in the WY form; every product over Dk, Dv or the chunk runs in
// the 6 x 16 register tile. S is the head's state, [Dv][Dk].
void chunk_head(const HeadView& hv, int t0, int n, float* S, float* out, ChunkScratch& s) {
  const int Dk = hv.in.Dk, Dv = hv.in.Dv, C = kGatedDeltaChunk, Dkp = s.Dkp, Dvp = s.Dvp;
  // Inputs: q and k rows (zero-padded), k transposed (columns past n zero), beta-scaled v and
  // beta exp(G)-scaled k, and S transposed to [Dk][Dv].
  float acc = 0.f;
  for (int i = 0; i < n; ++i) s.G[i] = acc += hv.g(t0 + i);
  std::fill(s.Kt.begin(), s.Kt.end(), 0.f);
  for (int i = 0; i < n; ++i) {
    const float *q = hv.q(t0 + i), *k = hv.k(t0 + i), *v = hv.v(t0 + i);
    const float beta = hv.beta(t0 + i), bk = beta * std::exp(s.G[i]);
    for (int d = 0; d < Dk; ++d) {
      s.Q[size_t(i) * Dkp + d] = q[d];
      s.K[size_t(i) * Dkp + d] = k[d];
      s.Kt[size_t(d) * C + i] = k[d];
      s.Bk[size_t(i) * Dkp + d] = bk * k[d];
    }
    for (int c = 0; c < Dv; ++c) s.Bv[size_t(i) * Dvp + c] = beta * v[c];
  }
  for (int c = 0; c < Dv; ++c)
    for (int d = 0; d < Dk; ++d) s.St[size_t(d) * Dvp + c] = S[size_t(c) * Dk + d];

  // 1. KK = K K^T and QK = Q K^T (n x C; columns past n are zero).
  tiled_product(s.K.data(), Dkp, n, s.Kt.data(), C, Dk, C / kTileCols, s.KK.data(), C, false);
  tiled_product(s.Q.data(), Dkp, n, s.Kt.data(), C, Dk, C / kTileCols, s.QK.data(), C, false);
  // 2. T = (I + L)^-1 with L[i][j] = beta_i (k_i . k_j) exp(G_i - G_j), j < i, by forward
  //    substitution (unit lower triangular); entries above the diagonal stay zero.
  for (int i = 0; i < n; ++i) {
    float* Li = s.KK.data() + size_t(i) * C;
    const float beta = hv.beta(t0 + i);
    for (int j = 0; j < i; ++j) Li[j] *= beta * std::exp(s.G[i] - s.G[j]);
    float* Ti = s.Tm.data() + size_t(i) * C;
    for (int j = 0; j < i; ++j) {
      float sum = 0.f;
      for (int m = j; m < i; ++m) sum += Li[m] * s.Tm[size_t(m) * C + j];
      Ti[j] = -sum;
    }
    Ti[i] = 1.f;
    std::fill(Ti + i + 1, Ti + C, 0.f);
  }
  // 3. U = T (beta V), W = T (beta exp(G) K).
  tiled_product(s.Tm.data(), C, n, s.Bv.data(), Dvp, n, Dvp / kTileCols, s.U.data(), Dvp, false);
  tiled_product(s.Tm.data(), C, n, s.Bk.data(), Dkp, n, Dkp / kTileCols, s.W.data(), Dkp, false);
  // 4. V' = U - W S^T.
  tiled_product(s.W.data(), Dkp, n, s.St.data(), Dvp, Dk, Dvp / kTileCols, s.Vp.data(), Dvp,
                false);
  for (size_t i = 0; i < size_t(n) * Dvp; ++i) s.Vp[i] = s.U[i] - s.Vp[i];
  // 5. O_i = exp(G_i) q_i^T S + sum_{j<=i} (q_i . k_j) exp(G_i - G_j) V'_j.
  tiled_product(s.Q.data(), Dkp, n, s.St.data(), Dvp, Dk, Dvp / kTileCols, s.O.data(), Dvp,
                false);
  for (int i = 0; i < n; ++i) {
    const float decay = std::exp(s.G[i]);
    float* o = s.O.data() + size_t(i) * Dvp;
    for (int c = 0; c < Dv; ++c) o[c] *= decay;
    float* qk = s.QK.data() + size_t(i) * C;
    for (int j = 0; j <= i; ++j) qk[j] *= std::exp(s.G[i] - s.G[j]);
    std::fill(qk + i + 1, qk + C, 0.f);
  }
  tiled_product(s.QK.data(), C, n, s.Vp.data(), Dvp, n, Dvp / kTileCols, s.O.data(), Dvp, true);
  for (int i = 0; i < n; ++i)
    std::copy(s.O.data() + size_t(i) * Dvp, s.O.data() + size_t(i) * Dvp + Dv, hv.out(out, t0 + i));
  // 6. S <- exp(G_last) S + sum_j exp(G_last - G_j) V'_j k_j^T, i.e. in our layout
  //    S[c] = exp(G_last) S[c] + sum_j A[c][j] k_j with A[c][j] = exp(G_last - G_j) V'_j[c].
  const float G_last = s.G[n - 1], last_decay = std::exp(G_last);
  for (int j = 0; j < n; ++j) {
    const float f = std::exp(G_last - s.G[j]);
    for (int c = 0; c < Dv; ++c) s.A[size_t(c) * C + j] = f * s.Vp[size_t(j) * Dvp + c];
  }
  for (int c = 0; c < Dv; ++c)
    for (int d = 0; d < Dk; ++d) s.Sp[size_t(c) * Dkp + d] = last_decay * S[size_t(c) * Dk + d];
  tiled_product(s.A.data(), C, Dv, s.K.data(), Dkp, n, Dkp / kTileCols, s.Sp.data(), Dkp, true);
  for (int c = 0; c < Dv; ++c)
    std::copy(s.Sp.data() + size_t(c) * Dkp, s.Sp.data() + size_t(c) * Dkp + Dk,
              S + size_t(c) * Dk);
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
