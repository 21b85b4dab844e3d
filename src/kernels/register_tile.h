// The 6 x 16 register tile every fp32 matrix product in the kernels is built from:
// c[i][0..16) (+)= sum_k a[i][k] * b[k][0..16) for NT <= 6 rows of a. Each k step is 2 loads of
// b and NT broadcasts of a for 2*NT FMAs, so with NT = 6 the loop runs at the FMA ports, not
// the load ports (12 accumulators + 2 b registers + 1 broadcast = 15 of the 16 YMM registers).
// The accumulators are named variables, not an array: GCC keeps an array of __m256 on the
// stack and would store all twelve every iteration.
#pragma once

#include <immintrin.h>

#include <cstddef>

namespace qmlx {

constexpr int kTileRows = 6;
constexpr int kTileCols = 16;

// a: NT rows, `lda` floats apart, K values each; b: K rows of 16 floats, `ldb` apart;
// c: NT rows of 16 floats, `ldc` apart, added to when `accumulate`.
template <int NT>
inline void register_tile(const float* a, size_t lda, const float* b, size_t ldb, int K, float* c,
                          size_t ldc, bool accumulate) {
  static_assert(NT >= 1 && NT <= kTileRows);
  __m256 a0 = _mm256_setzero_ps(), b0 = a0, a1 = a0, b1 = a0, a2 = a0, b2 = a0, a3 = a0, b3 = a0,
         a4 = a0, b4 = a0, a5 = a0, b5 = a0;
  if (accumulate) {
    // Only rows < NT are read: the accumulators of the others are never stored.
    a0 = _mm256_loadu_ps(c), b0 = _mm256_loadu_ps(c + 8);
    if constexpr (NT > 1) a1 = _mm256_loadu_ps(c + ldc), b1 = _mm256_loadu_ps(c + ldc + 8);
    if constexpr (NT > 2) a2 = _mm256_loadu_ps(c + 2 * ldc), b2 = _mm256_loadu_ps(c + 2 * ldc + 8);
    if constexpr (NT > 3) a3 = _mm256_loadu_ps(c + 3 * ldc), b3 = _mm256_loadu_ps(c + 3 * ldc + 8);
    if constexpr (NT > 4) a4 = _mm256_loadu_ps(c + 4 * ldc), b4 = _mm256_loadu_ps(c + 4 * ldc + 8);
    if constexpr (NT > 5) a5 = _mm256_loadu_ps(c + 5 * ldc), b5 = _mm256_loadu_ps(c + 5 * ldc + 8);
  }
  const float* x0 = a;
  const float* x1 = a + lda;
  const float* x2 = a + 2 * lda;
  const float* x3 = a + 3 * lda;
  const float* x4 = a + 4 * lda;
  const float* x5 = a + 5 * lda;
  for (int k = 0; k < K; ++k, b += ldb) {
    const __m256 w0 = _mm256_loadu_ps(b), w1 = _mm256_loadu_ps(b + 8);
    __m256 xb = _mm256_broadcast_ss(x0 + k);
    a0 = _mm256_fmadd_ps(w0, xb, a0);
    b0 = _mm256_fmadd_ps(w1, xb, b0);
    if constexpr (NT > 1) {
      xb = _mm256_broadcast_ss(x1 + k);
      a1 = _mm256_fmadd_ps(w0, xb, a1);
      b1 = _mm256_fmadd_ps(w1, xb, b1);
    }
    if constexpr (NT > 2) {
      xb = _mm256_broadcast_ss(x2 + k);
      a2 = _mm256_fmadd_ps(w0, xb, a2);
      b2 = _mm256_fmadd_ps(w1, xb, b2);
    }
    if constexpr (NT > 3) {
      xb = _mm256_broadcast_ss(x3 + k);
      a3 = _mm256_fmadd_ps(w0, xb, a3);
      b3 = _mm256_fmadd_ps(w1, xb, b3);
    }
    if constexpr (NT > 4) {
      xb = _mm256_broadcast_ss(x4 + k);
      a4 = _mm256_fmadd_ps(w0, xb, a4);
      b4 = _mm256_fmadd_ps(w1, xb, b4);
    }
    if constexpr (NT > 5) {
      xb = _mm256_broadcast_ss(x5 + k);
      a5 = _mm256_fmadd_ps(w0, xb, a5);
      b5 = _mm256_fmadd_ps(w1, xb, b5);
    }
  }
  const __m256 results[2 * kTileRows] = {a0, b0, a1, b1, a2, b2, a3, b3, a4, b4, a5, b5};
  for (int i = 0; i < NT; ++i) {
    _mm256_storeu_ps(c + i * ldc, results[2 * i]);
    _mm256_storeu_ps(c + i * ldc + 8, results[2 * i + 1]);
  }
}

using RegisterTileFn = void (*)(const float*, size_t, const float*, size_t, int, float*, size_t,
                                bool);
// register_tile<n> for n rows, 1 <= n <= 6.
inline constexpr RegisterTileFn kRegisterTiles[kTileRows + 1] = {
    nullptr,          register_tile<1>, register_tile<2>, register_tile<3>,
    register_tile<4>, register_tile<5>, register_tile<6>};

// c ([M][16*n], ldc) (+)= a ([M][K], lda) * b ([K][16*n], ldb), in 6 x 16 tiles.
inline void tiled_product(const float* a, size_t lda, int M, const float* b, size_t ldb, int K,
                          int column_tiles, float* c, size_t ldc, bool accumulate) {
  for (int j = 0; j < column_tiles; ++j)
    for (int i = 0; i < M; i += kTileRows) {
      const int n = M - i < kTileRows ? M - i : kTileRows;
      kRegisterTiles[n](a + size_t(i) * lda, lda, b + size_t(j) * kTileCols, ldb, K,
                        c + size_t(i) * ldc + size_t(j) * kTileCols, ldc, accumulate);
    }
}

}  // namespace qmlx
