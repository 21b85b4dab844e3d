#include "kernels/affine_gemv.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/affine_codes.h"
#include "kernels/prefetch.h"
#include "kernels/simd.h"

namespace qmlx {
namespace {

constexpr int kChunk = 32;  // columns per 16 bytes of 4-bit codes (see Int16Activations)

using simd::hsum;

inline __m256i load256(const int16_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Integer dots of one group of byte codes (natural order) with the int16 activations of NB
// rows: each 16 codes are widened once and multiplied with every row. The int32 sums are exact,
// so a row's group dot is the same integer whatever NB is.
template <int NB>
inline void dot_group_bytes(const uint8_t* q, const int16_t* const* xq, size_t offset, int n,
                            __m256i* acc) {
  for (int b = 0; b < NB; ++b) acc[b] = _mm256_setzero_si256();
  for (int i = 0; i < n; i += 16) {
    const __m256i w =
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + i)));
    for (int b = 0; b < NB; ++b)
      acc[b] = _mm256_add_epi32(acc[b], _mm256_madd_epi16(w, load256(xq[b] + offset + i)));
  }
}

// The same for 4-bit codes: 16 bytes hold 32 codes; the low nibbles are the even columns.
template <int NB>
inline void dot_group_nibbles(const uint8_t* q, const int16_t* const* xq, size_t offset, int n,
                              __m256i* acc) {
  for (int b = 0; b < NB; ++b) acc[b] = _mm256_setzero_si256();
  const __m256i mask = _mm256_set1_epi16(0x0f);
  for (int i = 0; i < n; i += kChunk) {
    __m256i bytes =
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + i / 2)));
    const __m256i even = _mm256_and_si256(bytes, mask), odd = _mm256_srli_epi16(bytes, 4);
    for (int b = 0; b < NB; ++b) {
      acc[b] = _mm256_add_epi32(acc[b], _mm256_madd_epi16(even, load256(xq[b] + offset + i)));
      acc[b] = _mm256_add_epi32(acc[b], _mm256_madd_epi16(odd, load256(xq[b] + offset + i + 16)));
    }
  }
}

// Element i of a scale or bias array whose type is known at compile time (one load, no switch).
template <ScalarType kType>
inline float meta_at(const uint8_t* p, size_t i) {
  if constexpr (kType == ScalarType::kF32) return reinterpret_cast<const float*>(p)[i];
  if constexpr (kType == ScalarType::kF16)
    return f16_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
  if constexpr (kType == ScalarType::kBF16)
    return bf16_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
}

// Eight consecutive scales or biases as floats.
template <ScalarType kType>
inline __m256 meta8_at(const uint8_t* p, size_t i) {
  if constexpr (kType == ScalarType::kF32)
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p) + i);
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i));
  if constexpr (kType == ScalarType::kF16) return _mm256_cvtph_ps(h);
  // bf16 is the top half of a float.
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// Group g's integer dots for NB rows. kGroup: the group size when known at compile time (the
// 4- and 8-bit kernels, whose group loops then unroll and keep the accumulators in registers),
// else 0.
template <int kBits, int kGroup, int NB>
inline void dot_group(const int16_t* const* xq, const WeightMatrix& w, const uint8_t* row, int r,
                      int g, uint8_t* scratch, __m256i* acc) {
  const int gs = kGroup > 0 ? kGroup : w.group_size;
  const size_t offset = size_t(g) * gs;
  if constexpr (kBits == 4)
    return dot_group_nibbles<NB>(row + size_t(g) * gs / 2, xq, offset, gs, acc);
  if constexpr (kBits == 8) return dot_group_bytes<NB>(row + offset, xq, offset, gs, acc);
  return dot_group_bytes<NB>(unpack_group_codes(w, r, g, scratch), xq, offset, gs, acc);
}

// Row r of w times NB activation rows, into y[b * ldy + r]. The row's groups are taken eight
// at a time so that their scales, biases and steps are applied in vectors: done per group in
// scalars, that bookkeeping cost as much as the 64 codes' arithmetic and held the 4-bit kernel
// to a third of what the core can do. A group's integer dot fits int32: at most 128 x 255 x
// 32767 < 2^31 (group sizes 32-128 only). The float steps after the integer dots are the same
// for every NB and done per row in the same order, so a row's result is bit-identical whatever
// rows share the call (the generated-row arithmetic of kernels/matmul.h).
template <int kBits, int kGroup, ScalarType kScale, int NB>
void dot_rows(const Int16Activations* in, const WeightMatrix& w, int r, const uint8_t* row,
              float* y, size_t ldy) {
  const int groups = in[0].steps.size();
  const size_t meta = size_t(r) * groups;
  uint8_t scratch[128];
  const int16_t* xq[NB];
  __m256 total[NB], bias_total[NB];
  for (int b = 0; b < NB; ++b) {
    xq[b] = in[b].codes.data();
    total[b] = bias_total[b] = _mm256_setzero_ps();
  }
  int g = 0;
  for (; g + 8 <= groups; g += 8) {
    __m256i acc[8][NB];
    for (int j = 0; j < 8; ++j) dot_group<kBits, kGroup, NB>(xq, w, row, r, g + j, scratch, acc[j]);
    const __m256 scales = meta8_at<kScale>(w.scales, meta + g);
    const __m256 biases = meta8_at<kScale>(w.biases, meta + g);
    for (int b = 0; b < NB; ++b) {
      const __m256i sums[8] = {acc[0][b], acc[1][b], acc[2][b], acc[3][b],
                               acc[4][b], acc[5][b], acc[6][b], acc[7][b]};
      const __m256 multiplier = _mm256_mul_ps(scales, _mm256_loadu_ps(in[b].steps.data() + g));
      total[b] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(simd::hsum8(sums)), multiplier, total[b]);
      bias_total[b] =
          _mm256_fmadd_ps(biases, _mm256_loadu_ps(in[b].sums.data() + g), bias_total[b]);
    }
  }
  float tail[NB] = {};
  for (; g < groups; ++g) {
    __m256i acc[NB];
    dot_group<kBits, kGroup, NB>(xq, w, row, r, g, scratch, acc);
    // Explicit FMAs: left to contraction, the compiler fuses these differently for different NB
    // (and vectorises across rows), which changed a row's bits with the rows beside it.
    const float scale = meta_at<kScale>(w.scales, meta + g);
    const float bias = meta_at<kScale>(w.biases, meta + g);
    for (int b = 0; b < NB; ++b) {
      const float dot = hsum(_mm256_cvtepi32_ps(acc[b])) * scale;
      tail[b] = std::fma(bias, in[b].sums[g], std::fma(dot, in[b].steps[g], tail[b]));
    }
  }
  for (int b = 0; b < NB; ++b)
    y[size_t(b) * ldy + r] = hsum(_mm256_add_ps(total[b], bias_total[b])) + tail[b];
}

// Activation rows taken together by one pass over a weight row; more are done in further
// passes over the same row (then in L1). `qmlx_kernel_bench 1 batched-gemv`, CPU ms per step of
// the 0.8B decode matrices: 88 at B = 4 and 177 at B = 8 in passes of 2, 101 and 200 in passes
// of 4 (whose 32 accumulators spill).
constexpr int kMaxBatch = 2;

template <int kBits, int kGroup, ScalarType kScale>
void dot_rows_batched(const Int16Activations* in, int B, const WeightMatrix& w, int r,
                      const uint8_t* row, float* y, size_t ldy) {
  for (int b = 0; b < B; b += kMaxBatch) {
    const Int16Activations* part = in + b;
    float* yb = y + size_t(b) * ldy;
    if (B - b == 1)
      dot_rows<kBits, kGroup, kScale, 1>(part, w, r, row, yb, ldy);
    else
      dot_rows<kBits, kGroup, kScale, kMaxBatch>(part, w, r, row, yb, ldy);
  }
}

template <int kBits, int kGroup>
void rows_of(const Int16Activations* in, int B, const WeightMatrix& w, int begin, int end, float* y,
             size_t ldy) {
  const size_t row_bytes = w.row_bytes();
  const int ahead = rows_to_prefetch_ahead(row_bytes);
  for (int r = begin; r < end; ++r) {
    const uint8_t* row = w.data + size_t(r) * row_bytes;
    if (r + ahead < end) prefetch_bytes(row + size_t(ahead) * row_bytes, row_bytes);
    switch (w.scale_type) {
      case ScalarType::kF32:
        dot_rows_batched<kBits, kGroup, ScalarType::kF32>(in, B, w, r, row, y, ldy);
        break;
      case ScalarType::kF16:
        dot_rows_batched<kBits, kGroup, ScalarType::kF16>(in, B, w, r, row, y, ldy);
        break;
      case ScalarType::kBF16:
        dot_rows_batched<kBits, kGroup, ScalarType::kBF16>(in, B, w, r, row, y, ldy);
        break;
    }
  }
}

// The 4- and 8-bit kernels for MLX's group sizes, compiled per size.
template <int kBits>
void rows_by_group(const Int16Activations* in, int B, const WeightMatrix& w, int begin, int end,
                   float* y, size_t ldy) {
  switch (w.group_size) {
    case 32:
      return rows_of<kBits, 32>(in, B, w, begin, end, y, ldy);
    case 64:
      return rows_of<kBits, 64>(in, B, w, begin, end, y, ldy);
    case 128:
      return rows_of<kBits, 128>(in, B, w, begin, end, y, ldy);
    default:
      return rows_of<kBits, 0>(in, B, w, begin, end, y, ldy);
  }
}

}  // namespace

Int16Activations prepare_affine_gemv_input(const float* x, int cols, int bits, int group_size) {
  return quantize_int16_activations(x, cols, group_size, bits == 4);
}

void affine_gemv_rows(const Int16Activations& in, const WeightMatrix& w, int begin, int end,
                      float* y) {
  affine_gemv_rows(&in, 1, w, begin, end, y, 0);
}

void affine_gemv_rows(const Int16Activations* in, int B, const WeightMatrix& w, int begin, int end,
                      float* y, size_t ldy) {
  switch (w.bits) {
    case 8:
      return rows_by_group<8>(in, B, w, begin, end, y, ldy);
    case 4:
      return rows_by_group<4>(in, B, w, begin, end, y, ldy);
    default:
      return rows_of<0, 0>(in, B, w, begin, end, y, ldy);
  }
}

}  // namespace qmlx
