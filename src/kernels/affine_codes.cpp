#include "kernels/affine_codes.h"

#include <immintrin.h>

namespace qmlx {
namespace {

// 4-bit: byte b holds code 2i in its low nibble and 2i+1 in its high nibble.
void unpack4(const uint8_t* src, int n, uint8_t* dst) {
  const __m128i mask = _mm_set1_epi8(0x0f);
  for (int i = 0; i < n; i += 32, src += 16, dst += 32) {
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    __m128i lo = _mm_and_si128(b, mask);
    __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), mask);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_unpacklo_epi8(lo, hi));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16), _mm_unpackhi_epi8(lo, hi));
  }
}

// Any width up to 8: code c occupies bits [c*bits, (c+1)*bits) of the little-endian stream.
void unpack_bits(const uint8_t* src, int n, int bits, uint8_t* dst) {
  const unsigned mask = (1u << bits) - 1;
  for (int c = 0; c < n; ++c) {
    unsigned bit = unsigned(c) * bits;
    unsigned byte = bit >> 3, shift = bit & 7;
    unsigned v = src[byte];
    if (shift + bits > 8) v |= unsigned(src[byte + 1]) << 8;
    dst[c] = uint8_t((v >> shift) & mask);
  }
}

}  // namespace

const uint8_t* unpack_group_codes(const WeightMatrix& w, int r, int g, uint8_t* scratch) {
  // group_size * bits is a multiple of 32, so every group starts on a byte boundary.
  const uint8_t* src = w.data + size_t(r) * w.row_bytes() + size_t(g) * w.group_size * w.bits / 8;
  switch (w.bits) {
    case 8:
      return src;
    case 4:
      unpack4(src, w.group_size, scratch);
      return scratch;
    default:
      unpack_bits(src, w.group_size, w.bits, scratch);
      return scratch;
  }
}

void dequantize_affine_row(const WeightMatrix& w, int r, float* out) {
  uint8_t scratch[128];
  for (int g = 0; g < w.groups_per_row(); ++g) {
    const uint8_t* q = unpack_group_codes(w, r, g, scratch);
    float scale, bias;
    group_scale_bias(w, r, g, &scale, &bias);
    float* o = out + size_t(g) * w.group_size;
    const __m256 vs = _mm256_set1_ps(scale), vb = _mm256_set1_ps(bias);
    for (int i = 0; i < w.group_size; i += 8) {
      __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i));
      __m256 qf = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
      _mm256_storeu_ps(o + i, _mm256_fmadd_ps(vs, qf, vb));
    }
  }
}

}  // namespace qmlx
