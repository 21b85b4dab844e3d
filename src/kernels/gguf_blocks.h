// GGUF tensor types: ggml's element formats as llama.cpp stores them in .gguf files. Block
// formats pack `block_elems` consecutive values of a row into `block_bytes` bytes (a scale, and
// for some a minimum, in f16, then the small integer codes); a row is a whole number of blocks.
// This file knows the numeric type ids, the block geometry and how to turn blocks back into
// floats (scalar reference decoding, as ggml-quants.c defines it, and AVX2 decoding of the
// types the llama.cpp comparison uses).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/scalar_type.h"

namespace qmlx {

// Values are ggml's `enum ggml_type` ids, the numbers written in a GGUF tensor info.
enum class GgufType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kBF16 = 30,
};

// The type with ggml id `id` when this engine can read it.
std::optional<GgufType> gguf_type_from_id(uint32_t id);
// ggml's name of the type ("Q4_K", "F16"); lower case accepted by gguf_type_from_name.
const char* gguf_type_name(GgufType t);
std::optional<GgufType> gguf_type_from_name(std::string_view name);
// ggml's name for any id, "type 42" for ids this engine does not know.
std::string gguf_type_id_name(uint32_t id);

// Values per block (1 for the float types, 32 or 256 for the quantized ones).
int gguf_block_elems(GgufType t);
size_t gguf_block_bytes(GgufType t);
inline bool gguf_is_quantized(GgufType t) { return gguf_block_elems(t) > 1; }
// Bytes of n values (n must be a multiple of the block size).
inline size_t gguf_bytes(GgufType t, size_t n) {
  return n / gguf_block_elems(t) * gguf_block_bytes(t);
}

// Decodes n values (a multiple of the block size) stored as type t.
void gguf_dequantize(GgufType t, const uint8_t* src, size_t n, float* out);
// The same with the scalar decoders only (Q8_0, Q4_K and Q6_K also have AVX2 ones, which
// gguf_dequantize uses): the definition the fast decoders are tested against.
void gguf_dequantize_scalar(GgufType t, const uint8_t* src, size_t n, float* out);

// Block fields shared by the scalar decoder and the fast kernels (kernels/gguf_gemv.cpp).
// The f16 at p (blocks store their scales as IEEE half, little-endian).
inline float gguf_half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_float(h);
}

// Q5_0 / Q5_1: the 32 five-bit codes of a block, from its fifth bits (bit i of the little-endian
// 32-bit word at qh_bytes is value i's) and its 16 nibble bytes (byte j holds value j in its
// low nibble and value j + 16 in its high nibble).
inline void gguf_five_bit_codes(const uint8_t* qh_bytes, const uint8_t* qs, int* codes) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  for (int j = 0; j < 16; ++j) {
    codes[j] = (qs[j] & 0x0f) | (((qh >> j) & 1) << 4);
    codes[j + 16] = (qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
  }
}

// Q3_K packs sixteen 6-bit scales, biased by 32, into 12 bytes: scale i takes its low 4 bits from
// the low nibble of byte i (i < 8) or the high nibble of byte i - 8, its top two bits from bits
// 2 * (i / 4) of byte 8 + i % 4. Writes them unbiased (-32 to 31).
inline void gguf_q3_k_scales(const uint8_t* packed, int* scales) {
  for (int i = 0; i < 16; ++i) {
    const int low = i < 8 ? packed[i] & 0x0f : packed[i - 8] >> 4;
    const int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
    scales[i] = (low | (high << 4)) - 32;
  }
}

// Q4_K / Q5_K pack eight 6-bit scales and eight 6-bit mins into 12 bytes: sub-blocks 0-3 use the
// low 6 bits of bytes 0-3 (scale) and 4-7 (min); sub-blocks 4-7 take their low nibbles from
// bytes 8-11 and their top two bits from the spare top bits of bytes 0-7.
inline void gguf_scale_min_k4(int j, const uint8_t* q, int* scale, int* min) {
  if (j < 4) {
    *scale = q[j] & 63;
    *min = q[j + 4] & 63;
  } else {
    *scale = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
    *min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Q6_K codes of 16 consecutive values in 16-bit lanes, for the four quarter-rows k of one half
// super-block: value l + 32k takes nibble k / 2 of ql[l + 32 (k % 2)] and bits 2k..2k+1 of
// qh[l]. `ql` and `qh` point at l (a multiple of 16); the codes are not yet biased by -32.
// Shared by the block decoder and the decode GEMV (kernels/gguf_gemv.cpp).
inline void gguf_q6_k_codes16(const uint8_t* ql, const uint8_t* qh, __m256i codes[4]) {
  auto widen = [](const uint8_t* p) {
    return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  };
  const __m256i mask4 = _mm256_set1_epi16(0x0f), mask2 = _mm256_set1_epi16(0x30);
  const __m256i lo = widen(ql), hi = widen(ql + 32), h = widen(qh);
  codes[0] = _mm256_or_si256(_mm256_and_si256(lo, mask4),
                             _mm256_and_si256(_mm256_slli_epi16(h, 4), mask2));
  codes[1] = _mm256_or_si256(_mm256_and_si256(hi, mask4),
                             _mm256_and_si256(_mm256_slli_epi16(h, 2), mask2));
  codes[2] = _mm256_or_si256(_mm256_srli_epi16(lo, 4), _mm256_and_si256(h, mask2));
  codes[3] =
      _mm256_or_si256(_mm256_srli_epi16(hi, 4), _mm256_and_si256(_mm256_srli_epi16(h, 2), mask2));
}

}  // namespace qmlx
