#include "kernels/gated_delta.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/register_tile.h"
#include "kernels/simd.h"
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

// The recurrence, rewritten so that each state row is read twice per token instead of seven
// times (scale, dot, axpy, dot): with a = exp(g_t) and old row s_j,
//   delta_j = beta (v_j - a (s_j . k));   s_j <- a s_j + delta_j k;
//   o_j = s_j(new) . q = a (s_j . q) + delta_j (k . q),
// so one pass computes both dots of the old row and a second writes the new one. The rows of S
// are independent given a token's inputs, so rows are taken 4 at a time (8 dot accumulators in
// registers) and a group of rows whose state fits in L1 runs through every token before the
// next group (in blocks of 64 tokens, whose q and k stay in L2): the state stays in L1 and only
// q and k stream. Every token
// of every call goes through the same arithmetic, so a token's result does not depend on how
// many tokens share the call (kernels/matmul.h's row kinds; Gated DeltaNet uses this form for
// prompt and generated rows alike).
constexpr int kRowTile = 4;
constexpr size_t kRowGroupBytes = 16 * 1024;
constexpr int kTokenBlock = 64;

// The per-token scalars a head's rows share.
struct TokenScalars {
  std::vector<float> alpha, kq;  // exp(g_t), k_t . q_t
  void compute(const HeadView& hv) {
    alpha.resize(hv.in.T);
    kq.resize(hv.in.T);
    for (int t = 0; t < hv.in.T; ++t) {
      alpha[t] = std::exp(hv.g(t));
      kq[t] = vec::dot(hv.k(t), hv.q(t), hv.in.Dk);
    }
  }
};

// Token t for rows [j0, j0 + NR) of the head's state S ([Dv][Dk]).
template <int NR>
inline void rows_step(const HeadView& hv, const TokenScalars& ts, int t, float* S, int j0,
                      float* out) {
  const int Dk = hv.in.Dk, D8 = Dk & ~7;
  const float *k = hv.k(t), *q = hv.q(t), *v = hv.v(t);
  float* s[kRowTile];
  for (int r = 0; r < kRowTile; ++r) s[r] = S + size_t(j0 + std::min(r, NR - 1)) * Dk;
  __m256 k0 = _mm256_setzero_ps(), k1 = k0, k2 = k0, k3 = k0, q0 = k0, q1 = k0, q2 = k0, q3 = k0;
  for (int d = 0; d < D8; d += 8) {
    const __m256 kv = _mm256_loadu_ps(k + d), qv = _mm256_loadu_ps(q + d);
    // Named accumulators, not an array: GCC keeps an array of __m256 on the stack.
    auto both_dots = [&](const float* row, __m256& to_k, __m256& to_q) {
      const __m256 x = _mm256_loadu_ps(row + d);
      to_k = _mm256_fmadd_ps(x, kv, to_k);
      to_q = _mm256_fmadd_ps(x, qv, to_q);
    };
    both_dots(s[0], k0, q0);
    if constexpr (NR > 1) both_dots(s[1], k1, q1);
    if constexpr (NR > 2) both_dots(s[2], k2, q2);
    if constexpr (NR > 3) both_dots(s[3], k3, q3);
  }
  // Lanes 0-3: s_r . k, lanes 4-7: s_r . q; the columns past the last multiple of 8 after.
  const __m256 accs[8] = {k0, k1, k2, k3, q0, q1, q2, q3};
  float dots[8];
  _mm256_storeu_ps(dots, simd::hsum8(accs));
  for (int r = 0; r < NR; ++r)
    for (int d = D8; d < Dk; ++d) {
      dots[r] = std::fma(s[r][d], k[d], dots[r]);
      dots[4 + r] = std::fma(s[r][d], q[d], dots[4 + r]);
    }
  const float alpha = ts.alpha[t], beta = hv.beta(t);
  float* o = hv.out(out, t) + j0;
  float delta[kRowTile] = {};
  for (int r = 0; r < NR; ++r) {
    delta[r] = beta * std::fma(-alpha, dots[r], v[j0 + r]);
    o[r] = std::fma(delta[r], ts.kq[t], alpha * dots[4 + r]);
  }
  const __m256 a = _mm256_set1_ps(alpha);
  const __m256 d0 = _mm256_set1_ps(delta[0]), d1 = _mm256_set1_ps(delta[1]),
               d2 = _mm256_set1_ps(delta[2]), d3 = _mm256_set1_ps(delta[3]);
  for (int d = 0; d < D8; d += 8) {
    const __m256 kv = _mm256_loadu_ps(k + d);
    _mm256_storeu_ps(s[0] + d,
                     _mm256_fmadd_ps(d0, kv, _mm256_mul_ps(a, _mm256_loadu_ps(s[0] + d))));
    if constexpr (NR > 1)
      _mm256_storeu_ps(s[1] + d,
                       _mm256_fmadd_ps(d1, kv, _mm256_mul_ps(a, _mm256_loadu_ps(s[1] + d))));
    if constexpr (NR > 2)
      _mm256_storeu_ps(s[2] + d,
                       _mm256_fmadd_ps(d2, kv, _mm256_mul_ps(a, _mm256_loadu_ps(s[2] + d))));
    if constexpr (NR > 3)
      _mm256_storeu_ps(s[3] + d,
                       _mm256_fmadd_ps(d3, kv, _mm256_mul_ps(a, _mm256_loadu_ps(s[3] + d))));
  }
  for (int r = 0; r < NR; ++r)
    for (int d = D8; d < Dk; ++d) s[r][d] = std::fma(delta[r], k[d], alpha * s[r][d]);
}

using RowsStepFn = void (*)(const HeadView&, const TokenScalars&, int, float*, int, float*);
constexpr RowsStepFn kRowsSteps[kRowTile + 1] = {nullptr, rows_step<1>, rows_step<2>, rows_step<3>,
                                                 rows_step<4>};

void recurrent_head(const HeadView& hv, float* S, float* out) {
  const int Dk = hv.in.Dk, Dv = hv.in.Dv;
  thread_local TokenScalars ts;
  ts.compute(hv);
  // Rows per group: a multiple of the tile whose state fits kRowGroupBytes.
  const int group =
      std::max(kRowTile, int(kRowGroupBytes / (size_t(Dk) * sizeof(float))) / kRowTile * kRowTile);
  // Tokens in blocks whose q and k stay in L2 while every row group runs through them.
  for (int t0 = 0; t0 < hv.in.T; t0 += kTokenBlock) {
    const int t1 = std::min(hv.in.T, t0 + kTokenBlock);
    for (int g0 = 0; g0 < Dv; g0 += group) {
      const int g1 = std::min(Dv, g0 + group);
      for (int t = t0; t < t1; ++t)
        for (int j = g0; j < g1; j += kRowTile)
          kRowsSteps[std::min(kRowTile, g1 - j)](hv, ts, t, S, j, out);
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
  tiled_product(s.W.data(), Dkp, n, s.St.data(), Dvp, Dk, Dvp / kTileCols, s.Vp.data(), Dvp, false);
  for (size_t i = 0; i < size_t(n) * Dvp; ++i) s.Vp[i] = s.U[i] - s.Vp[i];
  // 5. O_i = exp(G_i) q_i^T S + sum_{j<=i} (q_i . k_j) exp(G_i - G_j) V'_j.
  tiled_product(s.Q.data(), Dkp, n, s.St.data(), Dvp, Dk, Dvp / kTileCols, s.O.data(), Dvp, false);
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
