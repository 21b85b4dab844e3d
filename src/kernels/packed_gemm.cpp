#include "kernels/packed_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/register_tile.h"

namespace qmlx {
namespace {

constexpr int kPanelRows = kTileCols;  // outputs per tile: two YMM registers
constexpr int kTileTokens = kTileRows;  // tokens per tile
constexpr int kTokenBlock = 256;  // tokens per pass over the panel (sizes `partial` below)
constexpr int kDepth = 256;       // columns per pass: a 16 KiB slice of the panel stays in L1

// Transposes 8 rows of 8 floats (rows `ld` apart) into out[k][0..8) with out rows `ldo` apart.
inline void transpose8x8(const float* in, size_t ld, float* out, size_t ldo) {
  __m256 r0 = _mm256_loadu_ps(in + 0 * ld), r1 = _mm256_loadu_ps(in + 1 * ld);
  __m256 r2 = _mm256_loadu_ps(in + 2 * ld), r3 = _mm256_loadu_ps(in + 3 * ld);
  __m256 r4 = _mm256_loadu_ps(in + 4 * ld), r5 = _mm256_loadu_ps(in + 5 * ld);
  __m256 r6 = _mm256_loadu_ps(in + 6 * ld), r7 = _mm256_loadu_ps(in + 7 * ld);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(out + 0 * ldo, _mm256_permute2f128_ps(s0, s4, 0x20));
  _mm256_storeu_ps(out + 1 * ldo, _mm256_permute2f128_ps(s1, s5, 0x20));
  _mm256_storeu_ps(out + 2 * ldo, _mm256_permute2f128_ps(s2, s6, 0x20));
  _mm256_storeu_ps(out + 3 * ldo, _mm256_permute2f128_ps(s3, s7, 0x20));
  _mm256_storeu_ps(out + 4 * ldo, _mm256_permute2f128_ps(s0, s4, 0x31));
  _mm256_storeu_ps(out + 5 * ldo, _mm256_permute2f128_ps(s1, s5, 0x31));
  _mm256_storeu_ps(out + 6 * ldo, _mm256_permute2f128_ps(s2, s6, 0x31));
  _mm256_storeu_ps(out + 7 * ldo, _mm256_permute2f128_ps(s3, s7, 0x31));
}

// Rows [r0, r0 + n) of w as panel[k][16] floats; rows past n are zero.
void pack_panel(const WeightMatrix& w, int r0, int n, std::vector<float>& rows_buffer,
                float* panel) {
  const size_t cols = w.cols;
  rows_buffer.resize(kPanelRows * cols);
  dequantize_rows(w, r0, r0 + n, rows_buffer.data());
  std::fill(rows_buffer.begin() + n * cols, rows_buffer.end(), 0.f);
  const float* rows = rows_buffer.data();
  size_t k = 0;
  for (; k + 8 <= cols; k += 8) {
    transpose8x8(rows + k, cols, panel + k * kPanelRows, kPanelRows);
    transpose8x8(rows + 8 * cols + k, cols, panel + k * kPanelRows + 8, kPanelRows);
  }
  for (; k < cols; ++k)
    for (int j = 0; j < kPanelRows; ++j) panel[k * kPanelRows + j] = rows[j * cols + k];
}

}  // namespace

void packed_gemm_rows(const float* x, int T, const WeightMatrix& w, float* y, int begin, int end) {
  const int cols = w.cols;
  thread_local std::vector<float> rows_buffer, panel;
  panel.resize(size_t(kPanelRows) * cols);
  // Outputs of a panel with fewer than 16 rows, for a whole token block.
  float partial[kTokenBlock * kPanelRows];
  for (int r0 = begin; r0 < end; r0 += kPanelRows) {
    const int n = std::min(kPanelRows, end - r0);
    pack_panel(w, r0, n, rows_buffer, panel.data());
    for (int t0 = 0; t0 < T; t0 += kTokenBlock) {
      const int t1 = std::min(T, t0 + kTokenBlock);
      for (int k0 = 0; k0 < cols; k0 += kDepth) {
        const int depth = std::min(kDepth, cols - k0);
        const float* slice = panel.data() + size_t(k0) * kPanelRows;
        for (int t = t0; t < t1; t += kTileTokens) {
          const int nt = std::min(kTileTokens, t1 - t);
          const float* xt = x + size_t(t) * cols + k0;
          if (n == kPanelRows) {
            kRegisterTiles[nt](xt, cols, slice, kPanelRows, depth, y + size_t(t) * w.rows + r0,
                               w.rows, k0 > 0);
            continue;
          }
          float* part = partial + size_t(t - t0) * kPanelRows;
          kRegisterTiles[nt](xt, cols, slice, kPanelRows, depth, part, kPanelRows, k0 > 0);
          if (k0 + depth < cols) continue;
          for (int i = 0; i < nt; ++i)
            std::copy(part + i * kPanelRows, part + i * kPanelRows + n,
                      y + size_t(t + i) * w.rows + r0);
        }
      }
    }
  }
}

}  // namespace qmlx
