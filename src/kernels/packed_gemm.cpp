#include "kernels/packed_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

namespace qmlx {
namespace {

constexpr int kPanelRows = 16;    // outputs per tile: two YMM registers
constexpr int kTileTokens = 6;    // tokens per tile: 12 accumulators + 2 weights + 1 broadcast
constexpr int kTokenBlock = 256;  // tokens whose activations are reused across all row panels

// Rows [r0, r0 + n) of w as panel[k][16] floats; rows past n are zero.
void pack_panel(const WeightMatrix& w, int r0, int n, std::vector<float>& rows_buffer,
                float* panel) {
  const size_t cols = w.cols;
  rows_buffer.resize(kPanelRows * cols);
  dequantize_rows(w, r0, r0 + n, rows_buffer.data());
  std::fill(rows_buffer.begin() + n * cols, rows_buffer.end(), 0.f);
  for (size_t k = 0; k < cols; ++k)
    for (int j = 0; j < kPanelRows; ++j) panel[k * kPanelRows + j] = rows_buffer[j * cols + k];
}

// out[i][0..16) = sum_k x[i][k] * panel[k][0..16) for NT tokens (rows of x `ldx` apart).
template <int NT>
void tile(const float* panel, int cols, const float* x, size_t ldx, float* out, size_t ldo) {
  __m256 acc[NT][2];
  for (int i = 0; i < NT; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (int k = 0; k < cols; ++k) {
    const __m256 w0 = _mm256_loadu_ps(panel + k * kPanelRows);
    const __m256 w1 = _mm256_loadu_ps(panel + k * kPanelRows + 8);
    for (int i = 0; i < NT; ++i) {
      const __m256 xb = _mm256_broadcast_ss(x + i * ldx + k);
      acc[i][0] = _mm256_fmadd_ps(w0, xb, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(w1, xb, acc[i][1]);
    }
  }
  for (int i = 0; i < NT; ++i) {
    _mm256_storeu_ps(out + i * ldo, acc[i][0]);
    _mm256_storeu_ps(out + i * ldo + 8, acc[i][1]);
  }
}

using TileFn = void (*)(const float*, int, const float*, size_t, float*, size_t);
constexpr TileFn kTiles[kTileTokens + 1] = {nullptr, tile<1>, tile<2>, tile<3>,
                                            tile<4>, tile<5>, tile<6>};

}  // namespace

void packed_gemm_rows(const float* x, int T, const WeightMatrix& w, float* y, int begin, int end) {
  const int cols = w.cols;
  thread_local std::vector<float> rows_buffer, panel;
  panel.resize(size_t(kPanelRows) * cols);
  float partial[kTileTokens * kPanelRows];  // a tile whose panel has fewer than 16 rows
  for (int t0 = 0; t0 < T; t0 += kTokenBlock) {
    const int t1 = std::min(T, t0 + kTokenBlock);
    for (int r0 = begin; r0 < end; r0 += kPanelRows) {
      const int n = std::min(kPanelRows, end - r0);
      pack_panel(w, r0, n, rows_buffer, panel.data());
      for (int t = t0; t < t1; t += kTileTokens) {
        const int nt = std::min(kTileTokens, t1 - t);
        const float* xt = x + size_t(t) * cols;
        if (n == kPanelRows) {
          kTiles[nt](panel.data(), cols, xt, cols, y + size_t(t) * w.rows + r0, w.rows);
        } else {
          kTiles[nt](panel.data(), cols, xt, cols, partial, kPanelRows);
          for (int i = 0; i < nt; ++i)
            std::copy(partial + i * kPanelRows, partial + i * kPanelRows + n,
                      y + size_t(t + i) * w.rows + r0);
        }
      }
    }
  }
}

}  // namespace qmlx
