#include "kernels/affine_gemv.h"

#include <immintrin.h>

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

// Integer dot of one group of byte codes (natural order) with the int16 activations.
inline __m256i dot_group_bytes(const uint8_t* q, const int16_t* xq, int n) {
  __m256i acc = _mm256_setzero_si256();
  for (int i = 0; i < n; i += 16) {
    __m256i w = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + i)));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(w, load256(xq + i)));
  }
  return acc;
}

// The same for 4-bit codes: 16 bytes hold 32 codes; the low nibbles are the even columns.
inline __m256i dot_group_nibbles(const uint8_t* q, const int16_t* xq, int n) {
  __m256i acc = _mm256_setzero_si256();
  const __m256i mask = _mm256_set1_epi16(0x0f);
  for (int i = 0; i < n; i += kChunk) {
    __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + i / 2)));
    __m256i even = _mm256_and_si256(b, mask), odd = _mm256_srli_epi16(b, 4);
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(even, load256(xq + i)));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(odd, load256(xq + i + 16)));
  }
  return acc;
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

// kGroup: the group size when known at compile time (the 4- and 8-bit kernels, whose group
// loops then unroll and keep all eight accumulators in registers), else 0.
template <int kBits, int kGroup>
inline __m256i dot_group(const Int16Activations& in, const WeightMatrix& w, const uint8_t* row,
                         int r, int g, uint8_t* scratch) {
  const int gs = kGroup > 0 ? kGroup : w.group_size;
  const int16_t* xq = in.codes.data() + size_t(g) * gs;
  if constexpr (kBits == 4) return dot_group_nibbles(row + size_t(g) * gs / 2, xq, gs);
  if constexpr (kBits == 8) return dot_group_bytes(row + size_t(g) * gs, xq, gs);
  return dot_group_bytes(unpack_group_codes(w, r, g, scratch), xq, gs);
}

// The row's groups are taken eight at a time so that their scales, biases and steps are
// applied in vectors: done per group in scalars, that bookkeeping cost as much as the 64
// codes' arithmetic and held the 4-bit kernel to a third of what the core can do. A group's
// integer dot fits int32: at most 128 x 255 x 32767 < 2^31 (group sizes 32-128 only).
template <int kBits, int kGroup, ScalarType kScale>
float dot_row(const Int16Activations& in, const WeightMatrix& w, int r, const uint8_t* row) {
  const int groups = in.steps.size();
  const size_t meta = size_t(r) * groups;
  uint8_t scratch[128];
  __m256 total = _mm256_setzero_ps(), bias_total = _mm256_setzero_ps();
  int g = 0;
  for (; g + 8 <= groups; g += 8) {
    __m256i acc[8];
    for (int j = 0; j < 8; ++j) acc[j] = dot_group<kBits, kGroup>(in, w, row, r, g + j, scratch);
    const __m256 multiplier =
        _mm256_mul_ps(meta8_at<kScale>(w.scales, meta + g), _mm256_loadu_ps(in.steps.data() + g));
    total = _mm256_fmadd_ps(_mm256_cvtepi32_ps(simd::hsum8(acc)), multiplier, total);
    bias_total = _mm256_fmadd_ps(meta8_at<kScale>(w.biases, meta + g),
                                 _mm256_loadu_ps(in.sums.data() + g), bias_total);
  }
  float tail = 0.f;
  for (; g < groups; ++g) {
    const __m256i acc = dot_group<kBits, kGroup>(in, w, row, r, g, scratch);
    tail += hsum(_mm256_cvtepi32_ps(acc)) * meta_at<kScale>(w.scales, meta + g) * in.steps[g] +
            meta_at<kScale>(w.biases, meta + g) * in.sums[g];
  }
  return hsum(_mm256_add_ps(total, bias_total)) + tail;
}

template <int kBits, int kGroup>
void rows_of(const Int16Activations& in, const WeightMatrix& w, int begin, int end, float* y) {
  const size_t row_bytes = w.row_bytes();
  const int ahead = rows_to_prefetch_ahead(row_bytes);
  for (int r = begin; r < end; ++r) {
    const uint8_t* row = w.data + size_t(r) * row_bytes;
    if (r + ahead < end) prefetch_bytes(row + size_t(ahead) * row_bytes, row_bytes);
    switch (w.scale_type) {
      case ScalarType::kF32:
        y[r] = dot_row<kBits, kGroup, ScalarType::kF32>(in, w, r, row);
        break;
      case ScalarType::kF16:
        y[r] = dot_row<kBits, kGroup, ScalarType::kF16>(in, w, r, row);
        break;
      case ScalarType::kBF16:
        y[r] = dot_row<kBits, kGroup, ScalarType::kBF16>(in, w, r, row);
        break;
    }
  }
}

// The 4- and 8-bit kernels for MLX's group sizes, compiled per size.
template <int kBits>
void rows_by_group(const Int16Activations& in, const WeightMatrix& w, int begin, int end,
                   float* y) {
  switch (w.group_size) {
    case 32:
      return rows_of<kBits, 32>(in, w, begin, end, y);
    case 64:
      return rows_of<kBits, 64>(in, w, begin, end, y);
    case 128:
      return rows_of<kBits, 128>(in, w, begin, end, y);
    default:
      return rows_of<kBits, 0>(in, w, begin, end, y);
  }
}

}  // namespace

Int16Activations prepare_affine_gemv_input(const float* x, int cols, int bits, int group_size) {
  return quantize_int16_activations(x, cols, group_size, bits == 4);
}

void affine_gemv_rows(const Int16Activations& in, const WeightMatrix& w, int begin, int end,
                      float* y) {
  switch (w.bits) {
    case 8:
      return rows_by_group<8>(in, w, begin, end, y);
    case 4:
      return rows_by_group<4>(in, w, begin, end, y);
    default:
      return rows_of<0, 0>(in, w, begin, end, y);
  }
}

}  // namespace qmlx
