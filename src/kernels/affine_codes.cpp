#include "kernels/affine_codes.h"

#include <immintrin.h>

#include <cstring>

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

void dequantize_affine_groups(const WeightMatrix& w, int r, int g0, int g1, float* out) {
  // Locals, not w's fields: the stores to `out` could alias w, so the compiler would reload them.
  const int group_size = w.group_size, bits = w.bits;
  const ScalarType scale_type = w.scale_type;
  const uint8_t* scales = w.scales;
  const uint8_t* biases = w.biases;
  const size_t meta = size_t(r) * w.groups_per_row();
  const uint8_t* row = w.data + size_t(r) * w.row_bytes();
  const size_t group_bytes = size_t(group_size) * bits / 8;
  // The 8 codes of a 4-bit word sit at bits 4c (LSB first).
  const __m256i nibble_shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  const __m256i nibble = _mm256_set1_epi32(0x0f);
  uint8_t scratch[128];
  for (int g = g0; g < g1; ++g, out += group_size) {
    const __m256 vs = _mm256_set1_ps(load_scalar(scales, scale_type, meta + g));
    const __m256 vb = _mm256_set1_ps(load_scalar(biases, scale_type, meta + g));
    const uint8_t* src = row + size_t(g) * group_bytes;
    // 4-bit codes are decoded in registers; 8-bit ones are bytes already (read in place, no
    // call), the other widths are unpacked to bytes first.
    if (bits == 4) {
      for (int i = 0; i < group_size; i += 8) {
        uint32_t word;
        std::memcpy(&word, src + i / 2, 4);
        const __m256i codes = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32(int(word)), nibble_shifts), nibble);
        _mm256_storeu_ps(out + i, _mm256_fmadd_ps(vs, _mm256_cvtepi32_ps(codes), vb));
      }
      continue;
    }
    const uint8_t* q = bits == 8 ? src : unpack_group_codes(w, r, g, scratch);
    for (int i = 0; i < group_size; i += 8) {
      const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i));
      const __m256 codes = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
      _mm256_storeu_ps(out + i, _mm256_fmadd_ps(vs, codes, vb));
    }
  }
}

}  // namespace qmlx
