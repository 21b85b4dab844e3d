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

template <int kBits, ScalarType kScale>
float dot_row(const Int16Activations& in, const WeightMatrix& w, int r) {
  const int gs = w.group_size, groups = in.steps.size();
  const uint8_t* row = w.data + size_t(r) * w.row_bytes();
  const size_t meta = size_t(r) * groups;
  uint8_t scratch[128];
  __m256 total = _mm256_setzero_ps();
  float bias_total = 0.f;
  for (int g = 0; g < groups; ++g) {
    const int16_t* xq = in.codes.data() + size_t(g) * gs;
    __m256i acc;
    if constexpr (kBits == 4) {
      acc = dot_group_nibbles(row + size_t(g) * gs / 2, xq, gs);
    } else if constexpr (kBits == 8) {
      acc = dot_group_bytes(row + size_t(g) * gs, xq, gs);
    } else {
      acc = dot_group_bytes(unpack_group_codes(w, r, g, scratch), xq, gs);
    }
    const float scale = meta_at<kScale>(w.scales, meta + g);
    total = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), _mm256_set1_ps(scale * in.steps[g]), total);
    bias_total += meta_at<kScale>(w.biases, meta + g) * in.sums[g];
  }
  return hsum(total) + bias_total;
}

template <int kBits>
void rows_of(const Int16Activations& in, const WeightMatrix& w, int begin, int end, float* y) {
  const size_t row_bytes = w.row_bytes();
  const int ahead = rows_to_prefetch_ahead(row_bytes);
  for (int r = begin; r < end; ++r) {
    if (r + ahead < end) prefetch_bytes(w.data + size_t(r + ahead) * row_bytes, row_bytes);
    switch (w.scale_type) {
      case ScalarType::kF32:
        y[r] = dot_row<kBits, ScalarType::kF32>(in, w, r);
        break;
      case ScalarType::kF16:
        y[r] = dot_row<kBits, ScalarType::kF16>(in, w, r);
        break;
      case ScalarType::kBF16:
        y[r] = dot_row<kBits, ScalarType::kBF16>(in, w, r);
        break;
    }
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
      return rows_of<8>(in, w, begin, end, y);
    case 4:
      return rows_of<4>(in, w, begin, end, y);
    default:
      return rows_of<0>(in, w, begin, end, y);
  }
}

}  // namespace qmlx
