#include "kernels/few_token_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/prefetch.h"
#include "kernels/simd.h"

namespace qmlx {
namespace {

constexpr int kChunkRows = 64;  // rows whose partial sums stay in L2 across the passes
constexpr int kTileRows = 4;    // 4 rows x 3 tokens = 12 accumulators
constexpr int kTileTokens = 3;
constexpr int kLanes = 8;
// Columns per pass: the activations' slice (T x depth floats) should take at most half of L1.
// Both are multiples of every column alignment (32, 64, 128, 256).
int pass_depth(int T) { return T <= 8 ? 512 : 256; }

// Keeps v in a register: without it GCC re-reads the operand from memory for every FMA that
// uses it (14 loads per 12 FMAs instead of 7), and the loop runs at the load ports.
#define QMLX_KEEP_IN_REGISTER(v) asm("" : "+x"(v))

// p[i][j][0..8) (+)= lane-wise sums over the 8-column steps of w_i * x_j for the 4 rows w_i
// (`ldw` floats apart) and NT <= 3 tokens x_j (`ldx` apart); p rows i are `ldp` floats apart.
// The activations stay in registers and the weights stream through one: per step 3 + 4 loads
// for 12 FMAs. Columns past the last multiple of 8 are added to lane 0.
template <int NT>
void dot_tile(const float* w, size_t ldw, const float* x, size_t ldx, int depth, float* p,
              size_t ldp, bool accumulate) {
  static_assert(NT >= 1 && NT <= kTileTokens);
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00,
         c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;
  if (accumulate) {
    c00 = _mm256_loadu_ps(p), c10 = _mm256_loadu_ps(p + ldp);
    c20 = _mm256_loadu_ps(p + 2 * ldp), c30 = _mm256_loadu_ps(p + 3 * ldp);
    if constexpr (NT > 1) {
      c01 = _mm256_loadu_ps(p + 8), c11 = _mm256_loadu_ps(p + ldp + 8);
      c21 = _mm256_loadu_ps(p + 2 * ldp + 8), c31 = _mm256_loadu_ps(p + 3 * ldp + 8);
    }
    if constexpr (NT > 2) {
      c02 = _mm256_loadu_ps(p + 16), c12 = _mm256_loadu_ps(p + ldp + 16);
      c22 = _mm256_loadu_ps(p + 2 * ldp + 16), c32 = _mm256_loadu_ps(p + 3 * ldp + 16);
    }
  }
  const int steps = depth & ~(kLanes - 1);
  for (int k = 0; k < steps; k += kLanes) {
    const __m256 x0 = _mm256_loadu_ps(x + k);
    const __m256 x1 = NT > 1 ? _mm256_loadu_ps(x + ldx + k) : x0;
    const __m256 x2 = NT > 2 ? _mm256_loadu_ps(x + 2 * ldx + k) : x0;
    for (int i = 0; i < kTileRows; ++i) {
      __m256 wv = _mm256_loadu_ps(w + i * ldw + k);
      QMLX_KEEP_IN_REGISTER(wv);
      __m256& a = i == 0 ? c00 : i == 1 ? c10 : i == 2 ? c20 : c30;
      a = _mm256_fmadd_ps(wv, x0, a);
      if constexpr (NT > 1) {
        __m256& b = i == 0 ? c01 : i == 1 ? c11 : i == 2 ? c21 : c31;
        b = _mm256_fmadd_ps(wv, x1, b);
      }
      if constexpr (NT > 2) {
        __m256& c = i == 0 ? c02 : i == 1 ? c12 : i == 2 ? c22 : c32;
        c = _mm256_fmadd_ps(wv, x2, c);
      }
    }
  }
  const __m256 sums[kTileRows][kTileTokens] = {
      {c00, c01, c02}, {c10, c11, c12}, {c20, c21, c22}, {c30, c31, c32}};
  for (int i = 0; i < kTileRows; ++i)
    for (int j = 0; j < NT; ++j) {
      float* out = p + i * ldp + j * kLanes;
      _mm256_storeu_ps(out, sums[i][j]);
      for (int k = steps; k < depth; ++k) out[0] += w[i * ldw + k] * x[j * ldx + k];
    }
}

using DotTileFn = void (*)(const float*, size_t, const float*, size_t, int, float*, size_t, bool);
constexpr DotTileFn kDotTiles[kTileTokens + 1] = {nullptr, dot_tile<1>, dot_tile<2>, dot_tile<3>};

// Starts loading columns [k0, k0 + depth) of row r (codes only: scales and biases of consecutive
// rows are consecutive, which the hardware prefetcher follows). A pass reads 256 or 512 columns
// from each row in turn, 2 KiB apart for a 2048-column 8-bit matrix: a stride the prefetcher
// does not follow, so without this every row waits for memory.
void prefetch_row_range(const WeightMatrix& w, int r, int k0, int depth) {
  if (w.tiled) return;  // a tiled row's columns are not contiguous (kernels/affine_tiles.h)
  const size_t begin = stored_bytes(w, k0), end = stored_bytes(w, k0 + depth);
  prefetch_bytes(w.data + size_t(r) * w.row_bytes() + begin, end - begin);
}

}  // namespace

void few_token_gemm_rows(const float* x, int T, const WeightMatrix& w, float* y, int begin,
                         int end) {
  const int cols = w.cols, depth_max = pass_depth(T);
  // partial[row in chunk][token][lane]: the 8-lane sums carried from one pass to the next,
  // and room for the rows of a last tile that do not exist (computed, never read).
  thread_local std::vector<float> partial, x_slice, rows;
  partial.resize(size_t(kChunkRows + kTileRows) * T * kLanes);
  // The pass's columns of every token, contiguous: the token rows themselves are cols floats
  // apart (8 KiB for cols = 2048), so several map to the same L1 sets and evict each other.
  x_slice.resize(size_t(T) * depth_max);
  rows.resize(size_t(kTileRows) * depth_max);
  const size_t ldp = size_t(T) * kLanes;
  for (int r0 = begin; r0 < end; r0 += kChunkRows) {
    const int n = std::min(kChunkRows, end - r0);
    for (int k0 = 0; k0 < cols; k0 += depth_max) {
      const int depth = std::min(depth_max, cols - k0);
      for (int t = 0; t < T; ++t)
        std::copy(x + size_t(t) * cols + k0, x + size_t(t) * cols + k0 + depth,
                  x_slice.data() + size_t(t) * depth_max);
      for (int i = 0; i < n; i += kTileRows) {
        // Two tiles ahead: one tile's work (~1-2 us) covers the memory latency with room.
        for (int ahead = i + 2 * kTileRows; ahead < std::min(n, i + 3 * kTileRows); ++ahead)
          prefetch_row_range(w, r0 + ahead, k0, depth);
        // Rows past the end repeat the last one; their sums land in the spare partial rows.
        for (int j = 0; j < kTileRows; ++j)
          dequantize_row_range(w, r0 + std::min(i + j, n - 1), k0, k0 + depth,
                               rows.data() + size_t(j) * depth_max);
        // Token blocks of 2 or 3 (16 tokens: 3 3 3 3 2 2): a 1-token tile is 4 FMAs per 5 loads.
        const int blocks = (T + kTileTokens - 1) / kTileTokens;
        for (int b = 0, t = 0; b < blocks; ++b) {
          const int nt = (T - t) / (blocks - b) + ((T - t) % (blocks - b) != 0);
          kDotTiles[nt](rows.data(), depth_max, x_slice.data() + size_t(t) * depth_max, depth_max,
                        depth, partial.data() + size_t(i) * ldp + size_t(t) * kLanes, ldp, k0 > 0);
          t += nt;
        }
      }
    }
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < n; ++i)
        y[size_t(t) * w.rows + r0 + i] =
            simd::hsum(_mm256_loadu_ps(partial.data() + size_t(i) * ldp + size_t(t) * kLanes));
  }
}

}  // namespace qmlx
