#include "kernels/gguf_blocks.h"

#include <immintrin.h>

#include <cctype>
#include <cstring>
#include <string>
#include <utility>

#include "kernels/scalar_type.h"

namespace qmlx {
namespace {

struct TypeInfo {
  GgufType type;
  const char* name;
  int block_elems;
  size_t block_bytes;
};

constexpr int kQK = 32;    // values per block of the 32-value formats
constexpr int kQKK = 256;  // values per "K-quant" super-block

// Block sizes follow ggml-common.h: f16 scale d (and min m), then code bytes.
constexpr TypeInfo kTypes[] = {
    {GgufType::kF32, "F32", 1, 4},
    {GgufType::kF16, "F16", 1, 2},
    {GgufType::kBF16, "BF16", 1, 2},
    {GgufType::kQ4_0, "Q4_0", kQK, 2 + kQK / 2},
    {GgufType::kQ4_1, "Q4_1", kQK, 4 + kQK / 2},
    {GgufType::kQ5_0, "Q5_0", kQK, 2 + 4 + kQK / 2},
    {GgufType::kQ5_1, "Q5_1", kQK, 4 + 4 + kQK / 2},
    {GgufType::kQ8_0, "Q8_0", kQK, 2 + kQK},
    {GgufType::kQ2_K, "Q2_K", kQKK, kQKK / 16 + kQKK / 4 + 4},
    {GgufType::kQ3_K, "Q3_K", kQKK, kQKK / 8 + kQKK / 4 + 12 + 2},
    {GgufType::kQ4_K, "Q4_K", kQKK, 4 + 12 + kQKK / 2},
    {GgufType::kQ5_K, "Q5_K", kQKK, 4 + 12 + kQKK / 8 + kQKK / 2},
    {GgufType::kQ6_K, "Q6_K", kQKK, kQKK / 2 + kQKK / 4 + kQKK / 16 + 2},
};

const TypeInfo& info(GgufType t) {
  for (const TypeInfo& i : kTypes)
    if (i.type == t) return i;
  return kTypes[0];
}

// --- 32-value formats: block = d (f16) [, m (f16)] [, 32 high bits] , 16 nibble bytes. Byte j
// holds value j in its low nibble and value j + 16 in its high nibble.

void dequant_q4_0(const uint8_t* b, float* y) {
  const float d = gguf_half_at(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = d * (int(qs[j] & 0x0f) - 8);
    y[j + kQK / 2] = d * (int(qs[j] >> 4) - 8);
  }
}

void dequant_q4_1(const uint8_t* b, float* y) {
  const float d = gguf_half_at(b), m = gguf_half_at(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = d * (qs[j] & 0x0f) + m;
    y[j + kQK / 2] = d * (qs[j] >> 4) + m;
  }
}

void dequant_q5_0(const uint8_t* b, float* y) {
  const float d = gguf_half_at(b);
  int codes[kQK];
  gguf_five_bit_codes(b + 2, b + 6, codes);
  for (int j = 0; j < kQK; ++j) y[j] = d * (codes[j] - 16);
}

void dequant_q5_1(const uint8_t* b, float* y) {
  const float d = gguf_half_at(b), m = gguf_half_at(b + 2);
  int codes[kQK];
  gguf_five_bit_codes(b + 4, b + 8, codes);
  for (int j = 0; j < kQK; ++j) y[j] = d * codes[j] + m;
}

void dequant_q8_0(const uint8_t* b, float* y) {
  const float d = gguf_half_at(b);
  for (int j = 0; j < kQK; ++j) y[j] = d * int8_t(b[2 + j]);
}

// --- K-quants: 256-value super-blocks of 16 or 8 sub-blocks with their own small scales.

// Layout: scales[16] (low nibble scale, high nibble min), qs[64] (2-bit codes), d, dmin.
void dequant_q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* q = b + 16;
  const float d = gguf_half_at(b + 80), dmin = gguf_half_at(b + 82);
  int is = 0;
  for (int half = 0; half < 2; ++half, q += 32) {
    // Each 32-byte chunk holds 128 values: 4 bit-planes of 2 bits, each plane two sub-blocks.
    for (int shift = 0; shift < 8; shift += 2) {
      for (int part = 0; part < 2; ++part) {
        const uint8_t sc = scales[is++];
        const float dl = d * (sc & 0x0f), ml = dmin * (sc >> 4);
        for (int l = 0; l < 16; ++l) *y++ = dl * ((q[l + 16 * part] >> shift) & 3) - ml;
      }
    }
  }
}

// Layout: hmask[32] (third bit), qs[64] (low 2 bits), scales[12] (sixteen 6-bit scales biased
// by 32), d. A clear hmask bit subtracts 4 from the code.
void dequant_q3_k(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* q = b + 32;
  const uint8_t* packed = b + 96;
  const float d = gguf_half_at(b + 108);
  int scales[16];
  gguf_q3_k_scales(packed, scales);
  int is = 0;
  uint8_t m = 1;
  for (int half = 0; half < 2; ++half, q += 32) {
    for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
      for (int part = 0; part < 2; ++part) {
        const float dl = d * scales[is++];
        for (int l = 16 * part; l < 16 * part + 16; ++l) {
          const int code = ((q[l] >> shift) & 3) - ((hmask[l] & m) ? 0 : 4);
          *y++ = dl * code;
        }
      }
    }
  }
}

// Layout: d, dmin, scales[12], qs[128]: 4 chunks of 64 values, low nibbles then high nibbles.
void dequant_q4_k(const uint8_t* b, float* y) {
  const float d = gguf_half_at(b), dmin = gguf_half_at(b + 2);
  const uint8_t* packed = b + 4;
  const uint8_t* q = b + 16;
  for (int chunk = 0; chunk < 4; ++chunk, q += 32) {
    for (int nib = 0; nib < 2; ++nib) {
      int sc, mn;
      gguf_scale_min_k4(2 * chunk + nib, packed, &sc, &mn);
      const float dl = d * sc, ml = dmin * mn;
      for (int l = 0; l < 32; ++l) *y++ = dl * ((q[l] >> (4 * nib)) & 0x0f) - ml;
    }
  }
}

// Layout: d, dmin, scales[12], qh[32] (fifth bits, bit 2*chunk + nib of byte l), qs[128].
void dequant_q5_k(const uint8_t* b, float* y) {
  const float d = gguf_half_at(b), dmin = gguf_half_at(b + 2);
  const uint8_t* packed = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* q = b + 48;
  for (int chunk = 0; chunk < 4; ++chunk, q += 32) {
    for (int nib = 0; nib < 2; ++nib) {
      int sc, mn;
      gguf_scale_min_k4(2 * chunk + nib, packed, &sc, &mn);
      const float dl = d * sc, ml = dmin * mn;
      const int bit = 2 * chunk + nib;
      for (int l = 0; l < 32; ++l) {
        const int code = ((q[l] >> (4 * nib)) & 0x0f) | (((qh[l] >> bit) & 1) << 4);
        *y++ = dl * code - ml;
      }
    }
  }
}

// Layout: ql[128] (low 4 bits), qh[64] (high 2 bits), int8 scales[16], d. Two halves of 128
// values; within a half, value l + 32 * k (k < 4) takes nibble k / 2 of ql[l + 32 * (k % 2)]
// and bits 2k..2k+1 of qh[l]; codes are biased by 32.
void dequant_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = gguf_half_at(b + 208);
  for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, y += 128) {
    for (int l = 0; l < 32; ++l) {
      for (int k = 0; k < 4; ++k) {
        const int low = (ql[l + 32 * (k % 2)] >> (4 * (k / 2))) & 0x0f;
        const int code = (low | (((qh[l] >> (2 * k)) & 3) << 4)) - 32;
        y[l + 32 * k] = d * sc[l / 16 + 2 * k] * code;
      }
    }
  }
}

// --- AVX2 decoders of the types the llama.cpp comparison uses (prefill dequantizes every
// weight once per chunk, so these are on the MoE prefill's path). Each computes exactly what
// the scalar decoder above computes, in the same order (tests/kernels: equal to the scalar).

void dequant_q8_0_avx2(const uint8_t* b, float* y) {
  const __m256 d = _mm256_set1_ps(gguf_half_at(b));
  for (int j = 0; j < kQK; j += 8) {
    const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 2 + j));
    _mm256_storeu_ps(y + j, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q))));
  }
}

void dequant_q4_k_avx2(const uint8_t* b, float* y) {
  const float d = gguf_half_at(b), dmin = gguf_half_at(b + 2);
  const uint8_t* packed = b + 4;
  const uint8_t* q = b + 16;
  const __m256i nibble = _mm256_set1_epi32(0x0f);
  for (int chunk = 0; chunk < 4; ++chunk, q += 32, y += 64) {
    // Sub-blocks 2 chunk (low nibbles) and 2 chunk + 1 (high nibbles) share the 32 bytes:
    // each 8 bytes are loaded and widened once for both.
    int sc0, mn0, sc1, mn1;
    gguf_scale_min_k4(2 * chunk, packed, &sc0, &mn0);
    gguf_scale_min_k4(2 * chunk + 1, packed, &sc1, &mn1);
    const __m256 dl0 = _mm256_set1_ps(d * sc0), ml0 = _mm256_set1_ps(dmin * mn0);
    const __m256 dl1 = _mm256_set1_ps(d * sc1), ml1 = _mm256_set1_ps(dmin * mn1);
    for (int l = 0; l < 32; l += 8) {
      const __m256i bytes =
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + l)));
      const __m256 low = _mm256_cvtepi32_ps(_mm256_and_si256(bytes, nibble));
      const __m256 high = _mm256_cvtepi32_ps(_mm256_srli_epi32(bytes, 4));
      _mm256_storeu_ps(y + l, _mm256_sub_ps(_mm256_mul_ps(dl0, low), ml0));
      _mm256_storeu_ps(y + 32 + l, _mm256_sub_ps(_mm256_mul_ps(dl1, high), ml1));
    }
  }
}

// 16 values at a time in 16-bit lanes (the codes of all four k from the same three loads), then
// widened to floats: half the instructions of doing each 8 values from bytes.
void dequant_q6_k_avx2(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = gguf_half_at(b + 208);
  const __m256i bias = _mm256_set1_epi16(32);
  for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, y += 128) {
    for (int l = 0; l < 32; l += 16) {
      __m256i codes[4];
      gguf_q6_k_codes16(ql + l, qh + l, codes);
      for (int k = 0; k < 4; ++k) {
        const __m256i code = _mm256_sub_epi16(codes[k], bias);
        const __m256 dl = _mm256_set1_ps(d * sc[l / 16 + 2 * k]);
        const __m256 first =
            _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(code)));
        const __m256 second =
            _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(code, 1)));
        _mm256_storeu_ps(y + l + 32 * k, _mm256_mul_ps(dl, first));
        _mm256_storeu_ps(y + l + 32 * k + 8, _mm256_mul_ps(dl, second));
      }
    }
  }
}

using BlockDecoder = void (*)(const uint8_t*, float*);

// The decoder of type t: the AVX2 one where there is one, unless `reference` asks for the
// scalar definition.
BlockDecoder decoder_for(GgufType t, bool reference) {
  switch (t) {
    case GgufType::kQ4_0:
      return dequant_q4_0;
    case GgufType::kQ4_1:
      return dequant_q4_1;
    case GgufType::kQ5_0:
      return dequant_q5_0;
    case GgufType::kQ5_1:
      return dequant_q5_1;
    case GgufType::kQ8_0:
      return reference ? dequant_q8_0 : dequant_q8_0_avx2;
    case GgufType::kQ2_K:
      return dequant_q2_k;
    case GgufType::kQ3_K:
      return dequant_q3_k;
    case GgufType::kQ4_K:
      return reference ? dequant_q4_k : dequant_q4_k_avx2;
    case GgufType::kQ5_K:
      return dequant_q5_k;
    case GgufType::kQ6_K:
      return reference ? dequant_q6_k : dequant_q6_k_avx2;
    default:
      return nullptr;
  }
}

}  // namespace

std::optional<GgufType> gguf_type_from_id(uint32_t id) {
  for (const TypeInfo& i : kTypes)
    if (uint32_t(i.type) == id) return i.type;
  return std::nullopt;
}

const char* gguf_type_name(GgufType t) { return info(t).name; }

std::optional<GgufType> gguf_type_from_name(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
  for (const TypeInfo& i : kTypes)
    if (upper == i.name) return i.type;
  return std::nullopt;
}

std::string gguf_type_id_name(uint32_t id) {
  if (auto t = gguf_type_from_id(id)) return gguf_type_name(*t);
  // ggml's other ids, so the error for an unsupported tensor names its type.
  static constexpr std::pair<uint32_t, const char*> kOther[] = {
      {9, "Q8_1"},   {15, "Q8_K"},   {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"},
      {19, "IQ1_S"}, {20, "IQ4_NL"}, {21, "IQ3_S"},   {22, "IQ2_S"},  {23, "IQ4_XS"},
      {24, "I8"},    {25, "I16"},    {26, "I32"},     {27, "I64"},    {28, "F64"},
      {29, "IQ1_M"}, {34, "TQ1_0"},  {35, "TQ2_0"},   {39, "MXFP4"}};
  for (const auto& [other_id, name] : kOther)
    if (other_id == id) return name;
  return "type " + std::to_string(id);
}

int gguf_block_elems(GgufType t) { return info(t).block_elems; }
size_t gguf_block_bytes(GgufType t) { return info(t).block_bytes; }

namespace {

void dequantize_with(GgufType t, const uint8_t* src, size_t n, float* out, bool reference) {
  switch (t) {
    case GgufType::kF32:
      convert_to_float(src, ScalarType::kF32, n, out);
      return;
    case GgufType::kF16:
      convert_to_float(src, ScalarType::kF16, n, out);
      return;
    case GgufType::kBF16:
      convert_to_float(src, ScalarType::kBF16, n, out);
      return;
    default:
      break;
  }
  const BlockDecoder decode = decoder_for(t, reference);
  const size_t elems = gguf_block_elems(t), bytes = gguf_block_bytes(t);
  for (size_t i = 0; i < n; i += elems, src += bytes) decode(src, out + i);
}

}  // namespace

void gguf_dequantize(GgufType t, const uint8_t* src, size_t n, float* out) {
  dequantize_with(t, src, n, out, false);
}

void gguf_dequantize_scalar(GgufType t, const uint8_t* src, size_t n, float* out) {
  dequantize_with(t, src, n, out, true);
}

}  // namespace qmlx
