#include "kernels/affine_gemv.h"

#include <immintrin.h>

#include "kernels/affine_codes.h"
#include "kernels/vec.h"

namespace qmlx {
namespace {

constexpr int kChunk = 32;  // columns per 16 bytes of 4-bit codes (see Int16Activations)

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

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

template <int kBits>
float dot_row(const Int16Activations& in, const WeightMatrix& w, int r, const float* scales,
              const float* biases) {
  const int gs = w.group_size, groups = w.groups_per_row();
  const uint8_t* row = w.data + size_t(r) * w.row_bytes();
  uint8_t scratch[128];
  __m256 total = _mm256_setzero_ps();
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
    total =
        _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), _mm256_set1_ps(scales[g] * in.steps[g]), total);
  }
  return hsum(total) + vec::dot(biases, in.sums.data(), groups);
}

template <int kBits>
void rows_of(const Int16Activations& in, const WeightMatrix& w, int begin, int end, float* y) {
  const int groups = w.groups_per_row();
  // Scales and biases of one row as floats (per thread, so no allocation per row).
  thread_local std::vector<float> meta;
  meta.resize(2 * size_t(groups));
  const size_t meta_row = size_t(groups) * scalar_size(w.scale_type);
  for (int r = begin; r < end; ++r) {
    convert_to_float(w.scales + r * meta_row, w.scale_type, groups, meta.data());
    convert_to_float(w.biases + r * meta_row, w.scale_type, groups, meta.data() + groups);
    y[r] = dot_row<kBits>(in, w, r, meta.data(), meta.data() + groups);
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
