#include "kernels/matmul.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/affine_codes.h"
#include "kernels/vec.h"

namespace qmlx {
namespace {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// sum_i q[i] * x[i] for n (a multiple of 16) byte codes, as 8 partial sums.
inline __m256 dot_codes(const uint8_t* q, const float* x, int n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 16) {
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + i));
    __m256 q0 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
    __m256 q1 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(b, 8)));
    acc0 = _mm256_fmadd_ps(q0, _mm256_loadu_ps(x + i), acc0);
    acc1 = _mm256_fmadd_ps(q1, _mm256_loadu_ps(x + i + 8), acc1);
  }
  return _mm256_add_ps(acc0, acc1);
}

// Codes 16i..16i+15 of a 4- or 8-bit row as two vectors of 8 floats each.
template <int kBits>
inline void load16_codes(const uint8_t* row, int i, __m256* lo, __m256* hi) {
  __m128i codes;
  if constexpr (kBits == 8) {
    codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i));
  } else {
    // 8 bytes hold 16 nibbles, low nibble first: interleave low and high halves.
    __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + i / 2));
    const __m128i mask = _mm_set1_epi8(0x0f);
    codes = _mm_unpacklo_epi8(_mm_and_si128(b, mask), _mm_and_si128(_mm_srli_epi16(b, 4), mask));
  }
  *lo = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(codes));
  *hi = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(codes, 8)));
}

// The 4- and 8-bit rows (the common formats) decoded in registers, without a scratch pass.
template <int kBits>
float dot_affine_row_fast(const WeightMatrix& w, int r, const float* x, const float* scales,
                          const float* group_sums) {
  const uint8_t* row = w.data + size_t(r) * w.row_bytes();
  __m256 total = _mm256_setzero_ps();
  for (int g = 0; g < w.groups_per_row(); ++g) {
    const int begin = g * w.group_size, end = begin + w.group_size;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int i = begin; i < end; i += 16) {
      __m256 lo, hi;
      load16_codes<kBits>(row, i, &lo, &hi);
      acc0 = _mm256_fmadd_ps(lo, _mm256_loadu_ps(x + i), acc0);
      acc1 = _mm256_fmadd_ps(hi, _mm256_loadu_ps(x + i + 8), acc1);
    }
    total = _mm256_fmadd_ps(_mm256_add_ps(acc0, acc1), _mm256_set1_ps(scales[g]), total);
  }
  return hsum(total) + vec::dot(scales + w.groups_per_row(), group_sums, w.groups_per_row());
}

// One output of a quantized row: sum over groups of scale * (q . x) + bias * sum(x). The
// scaled partial sums stay in a vector register; one horizontal sum per row.
float dot_affine_row(const WeightMatrix& w, int r, const float* x, const float* group_sums) {
  const int groups = w.groups_per_row();
  // Scales then biases of this row as floats (per thread, so no allocation per row).
  thread_local std::vector<float> meta_buffer;
  meta_buffer.resize(2 * size_t(groups));
  float* meta = meta_buffer.data();
  const size_t meta_offset = size_t(r) * groups * scalar_size(w.scale_type);
  convert_to_float(w.scales + meta_offset, w.scale_type, groups, meta);
  convert_to_float(w.biases + meta_offset, w.scale_type, groups, meta + groups);
  if (w.bits == 8) return dot_affine_row_fast<8>(w, r, x, meta, group_sums);
  if (w.bits == 4) return dot_affine_row_fast<4>(w, r, x, meta, group_sums);
  uint8_t scratch[128];
  __m256 total = _mm256_setzero_ps();
  for (int g = 0; g < groups; ++g) {
    const uint8_t* q = unpack_group_codes(w, r, g, scratch);
    total = _mm256_fmadd_ps(dot_codes(q, x + size_t(g) * w.group_size, w.group_size),
                            _mm256_set1_ps(meta[g]), total);
  }
  return hsum(total) + vec::dot(meta + groups, group_sums, groups);
}

// --- GGUF block formats: the minimal correct path (decode one row, then a float dot). Fast
// per-format kernels replace this block; prefill already goes through dequantize_rows.
float dot_gguf_row(const WeightMatrix& w, int r, const float* x) {
  thread_local std::vector<float> row;
  row.resize(size_t(w.cols));
  dequantize_rows(w, r, r + 1, row.data());
  return vec::dot(x, row.data(), size_t(w.cols));
}
// --- end GGUF block formats.

float dot_row(const WeightMatrix& w, int r, const float* x, const float* group_sums) {
  const uint8_t* row = w.data + size_t(r) * w.row_bytes();
  switch (w.format) {
    case WeightFormat::kF32:
      return vec::dot(x, reinterpret_cast<const float*>(row), w.cols);
    case WeightFormat::kF16:
      return vec::dot_typed(x, row, ScalarType::kF16, w.cols);
    case WeightFormat::kBF16:
      return vec::dot_typed(x, row, ScalarType::kBF16, w.cols);
    case WeightFormat::kAffine:
      return dot_affine_row(w, r, x, group_sums);
    case WeightFormat::kGguf:
      return dot_gguf_row(w, r, x);
  }
  return 0.f;
}

std::vector<float> group_sums_of(const WeightMatrix& w, const float* x) {
  std::vector<float> sums(w.groups_per_row());
  for (int g = 0; g < w.groups_per_row(); ++g)
    sums[g] = vec::sum(x + size_t(g) * w.group_size, w.group_size);
  return sums;
}

void gemv_rows(const float* x, const WeightMatrix& w, const float* group_sums, float* y, int begin,
               int end) {
  for (int r = begin; r < end; ++r) y[r] = dot_row(w, r, x, group_sums);
}

// y[t][r0 + j] for 4 weight rows and 2 activation rows at once: each loaded vector feeds
// several FMAs, which is what makes the prefill compute- rather than load-bound.
void dot_4x2(const float* w0, size_t cols, const float* x0, const float* x1, float* y0, float* y1) {
  __m256 a[4][2];
  for (auto& row : a) row[0] = row[1] = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 8 <= cols; i += 8) {
    __m256 xa = _mm256_loadu_ps(x0 + i), xb = _mm256_loadu_ps(x1 + i);
    for (int j = 0; j < 4; ++j) {
      __m256 wv = _mm256_loadu_ps(w0 + j * cols + i);
      a[j][0] = _mm256_fmadd_ps(wv, xa, a[j][0]);
      a[j][1] = _mm256_fmadd_ps(wv, xb, a[j][1]);
    }
  }
  for (int j = 0; j < 4; ++j) {
    float s0 = hsum(a[j][0]), s1 = hsum(a[j][1]);
    for (size_t k = i; k < cols; ++k) {
      s0 += w0[j * cols + k] * x0[k];
      s1 += w0[j * cols + k] * x1[k];
    }
    y0[j] = s0;
    y1[j] = s1;
  }
}

constexpr int kTileRows = 8;

// Prefill: dequantize rows [begin, end) tile by tile and multiply each tile by all T rows.
void gemm_rows(const float* x, int T, const WeightMatrix& w, float* y, int begin, int end) {
  const size_t cols = w.cols;
  std::vector<float> tile(kTileRows * cols);
  for (int r0 = begin; r0 < end; r0 += kTileRows) {
    int n = std::min(kTileRows, end - r0);
    dequantize_rows(w, r0, r0 + n, tile.data());
    int j = 0;
    for (; j + 4 <= n; j += 4) {
      const float* wt = tile.data() + j * cols;
      int t = 0;
      for (; t + 2 <= T; t += 2)
        dot_4x2(wt, cols, x + t * cols, x + (t + 1) * cols, y + size_t(t) * w.rows + r0 + j,
                y + size_t(t + 1) * w.rows + r0 + j);
      for (; t < T; ++t)
        for (int k = 0; k < 4; ++k)
          y[size_t(t) * w.rows + r0 + j + k] = vec::dot(wt + k * cols, x + t * cols, cols);
    }
    for (; j < n; ++j)
      for (int t = 0; t < T; ++t)
        y[size_t(t) * w.rows + r0 + j] = vec::dot(tile.data() + j * cols, x + t * cols, cols);
  }
}

void matmul_range(const float* x, int T, const WeightMatrix& w, const float* group_sums, float* y,
                  int begin, int end) {
  if (T == 1)
    gemv_rows(x, w, group_sums, y, begin, end);
  else
    gemm_rows(x, T, w, y, begin, end);
}

}  // namespace

void matmul(const float* x, int T, const WeightMatrix& w, float* y) {
  std::vector<float> group_sums;
  if (T == 1 && w.quantized()) group_sums = group_sums_of(w, x);
  // Enough rows per task that the scheduling cost stays small next to the row work.
  size_t grain = std::max<size_t>(kTileRows, (64 * 1024) / std::max<size_t>(1, w.row_bytes()));
  default_pool().parallel_for(
      w.rows,
      [&](size_t b, size_t e) { matmul_range(x, T, w, group_sums.data(), y, int(b), int(e)); },
      grain);
}

void matmul_serial(const float* x, int T, const WeightMatrix& w, float* y) {
  std::vector<float> group_sums;
  if (T == 1 && w.quantized()) group_sums = group_sums_of(w, x);
  matmul_range(x, T, w, group_sums.data(), y, 0, w.rows);
}

}  // namespace qmlx
