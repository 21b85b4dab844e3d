#include "kernels/gguf_gemv.h"

#include <immintrin.h>

#include <cstring>

#include "kernels/prefetch.h"
#include "kernels/row_passes.h"
#include "kernels/simd.h"

namespace qmlx {
namespace {

constexpr int kBlock = 32;   // activation group, and the Q8_0 block
constexpr int kSuper = 256;  // K-quant super-block

using simd::hsum;

inline __m256i load_x(const int16_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

inline __m256i bytes_u16(const uint8_t* p) {
  return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Q8_0: f16 d, int8 q[32]; w = d * q, for NB activation rows at once: each block's codes are
// widened once and multiplied with every row; each row's float steps are the same whatever NB
// is, so its result is bit-identical to the row alone. Even and odd blocks accumulate
// separately: one FMA chain (5 cycles per 34-byte block) would cap a core at ~20 GB/s.
template <int NB>
void dot_q8_0(const uint8_t* row, int blocks, const Int16Activations* in, float* y, size_t ldy) {
  __m256 totals[NB][2];
  for (int r = 0; r < NB; ++r) totals[r][0] = totals[r][1] = _mm256_setzero_ps();
  for (int b = 0; b < blocks; ++b, row += 34) {
    const __m256i q0 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2)));
    const __m256i q1 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 18)));
    const float d = gguf_half_at(row);
    for (int r = 0; r < NB; ++r) {
      const int16_t* x = in[r].codes.data() + size_t(b) * kBlock;
      const __m256i acc = _mm256_add_epi32(_mm256_madd_epi16(q0, load_x(x)),
                                           _mm256_madd_epi16(q1, load_x(x + 16)));
      totals[r][b & 1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), _mm256_set1_ps(d * in[r].steps[b]),
                                         totals[r][b & 1]);
    }
  }
  for (int r = 0; r < NB; ++r) y[size_t(r) * ldy] = hsum(_mm256_add_ps(totals[r][0], totals[r][1]));
}

// Rows of activations taken together by one pass over a Q8_0 row (16 float accumulators).
constexpr int kQ8Batch = 4;

void dot_q8_0_batched(const uint8_t* row, int blocks, const Int16Activations* in, int B, float* y,
                      size_t ldy) {
  in_row_passes<kQ8Batch>(B, [&]<int NB>(int b) {
    dot_q8_0<NB>(row, blocks, in + b, y + size_t(b) * ldy, ldy);
  });
}

// The 8 six-bit scales and 8 six-bit minimums of a Q4_K / Q5_K super-block from its 12 bytes:
// bytes 0-3 hold scales 0-3 in their low 6 bits, bytes 4-7 minimums 0-3; bytes 8-11 hold the
// low 4 bits of scales 4-7 (low nibble) and minimums 4-7 (high nibble), whose top 2 bits are
// the top bits of bytes 0-3 and 4-7. Word arithmetic does all 16 at once (the same values as
// gguf_scale_min_k4, which decodes one).
inline void k4_scales_and_mins(const uint8_t* packed, uint8_t scales[8], uint8_t mins[8]) {
  uint32_t w[3];
  std::memcpy(w, packed, 12);
  const uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, top2 = 0x03030303;
  const uint32_t s03 = w[0] & low6, m03 = w[1] & low6;
  const uint32_t s47 = (w[2] & low4) | (((w[0] >> 6) & top2) << 4);
  const uint32_t m47 = ((w[2] >> 4) & low4) | (((w[1] >> 6) & top2) << 4);
  std::memcpy(scales, &s03, 4);
  std::memcpy(scales + 4, &s47, 4);
  std::memcpy(mins, &m03, 4);
  std::memcpy(mins + 4, &m47, 4);
}

inline __m256 bytes_to_floats(const uint8_t* p) {
  int64_t eight;
  std::memcpy(&eight, p, 8);
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(eight)));
}

// Q4_K: f16 d, f16 dmin, scales[12], qs[128]; sub-block j (32 values) is
// w = d * sc_j * q - dmin * m_j, its codes the low (j even) or high (j odd) nibbles of 32 bytes.
// The 8 sub-blocks' integer dots are summed into one vector and scaled by the 8 multipliers
// d * sc_j * step_j at once, and the minimum term is one vector too.
float dot_q4_k(const uint8_t* row, int supers, const Int16Activations& in) {
  const __m256i mask = _mm256_set1_epi16(0x0f);
  __m256 total = _mm256_setzero_ps(), mins = total;
  uint8_t scales[8], min_codes[8];
  for (int s = 0; s < supers; ++s, row += 144) {
    const float d = gguf_half_at(row), dmin = gguf_half_at(row + 2);
    k4_scales_and_mins(row + 4, scales, min_codes);
    const size_t g0 = size_t(s) * 8;  // activation groups g0 .. g0 + 7
    const __m256 multiplier =
        _mm256_mul_ps(_mm256_mul_ps(bytes_to_floats(scales), _mm256_set1_ps(d)),
                      _mm256_loadu_ps(in.steps.data() + g0));
    mins = _mm256_fmadd_ps(_mm256_mul_ps(bytes_to_floats(min_codes), _mm256_set1_ps(dmin)),
                           _mm256_loadu_ps(in.sums.data() + g0), mins);
    const uint8_t* q = row + 16;
    const int16_t* x = in.codes.data() + g0 * kBlock;
    __m256i acc[8];
    for (int pair = 0; pair < 4; ++pair, q += 32, x += 2 * kBlock) {
      const __m256i b0 = bytes_u16(q), b1 = bytes_u16(q + 16);
      acc[2 * pair] =
          _mm256_add_epi32(_mm256_madd_epi16(_mm256_and_si256(b0, mask), load_x(x)),
                           _mm256_madd_epi16(_mm256_and_si256(b1, mask), load_x(x + 16)));
      acc[2 * pair + 1] =
          _mm256_add_epi32(_mm256_madd_epi16(_mm256_srli_epi16(b0, 4), load_x(x + 32)),
                           _mm256_madd_epi16(_mm256_srli_epi16(b1, 4), load_x(x + 48)));
    }
    total = _mm256_fmadd_ps(_mm256_cvtepi32_ps(simd::hsum8(acc)), multiplier, total);
  }
  return hsum(_mm256_sub_ps(total, mins));
}

// Q6_K: ql[128], qh[64], int8 scales[16], f16 d. In each half of 128 values, value l + 32k
// (l < 32, k < 4) has low bits nibble k/2 of ql[l + 32 (k%2)], high bits 2k..2k+1 of qh[l],
// code - 32, and scale sc[l/16 + 2k]; sub-block i is values 16i .. 16i + 15. The 16
// sub-blocks' integer dots are summed into two vectors, the -32 offset applied there (minus
// 32 times the sub-block's activation sum), and scaled by their 16 multipliers
// d * sc_i * step at once.
float dot_q6_k(const uint8_t* row, int supers, const Int16Activations& in) {
  __m256 total = _mm256_setzero_ps();
  const __m256i first_four = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  const __m256i last_four = _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7);
  for (int s = 0; s < supers; ++s, row += 210) {
    // Sub-block i (16 values) has scale sc[i] and activation group s * 8 + i / 2: its 16
    // multipliers d * sc[i] * step in two vectors (each of the 8 steps used twice).
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 192));
    const __m256 d = _mm256_set1_ps(gguf_half_at(row + 208));
    const __m256 steps = _mm256_loadu_ps(in.steps.data() + size_t(s) * 8);
    const __m256 sc_lo = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc));
    const __m256 sc_hi = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8)));
    const __m256 multipliers[2] = {
        _mm256_mul_ps(_mm256_mul_ps(d, sc_lo), _mm256_permutevar8x32_ps(steps, first_four)),
        _mm256_mul_ps(_mm256_mul_ps(d, sc_hi), _mm256_permutevar8x32_ps(steps, last_four))};
    const int32_t* sums16 = in.sums16.data() + size_t(s) * 16;
    // One half (8 sub-blocks) at a time keeps the accumulators in registers (all 16 at once
    // were spilled to the stack).
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = row + 64 * half;
      const uint8_t* qh = row + 128 + 32 * half;
      const int g0 = s * 8 + half * 4;  // activation groups of k = 0..3
      __m256i acc[8];                   // by sub-block within the half
      for (int l = 0; l < 32; l += 16) {
        __m256i codes[4];
        gguf_q6_k_codes16(ql + l, qh + l, codes);
        for (int k = 0; k < 4; ++k)
          acc[l / 16 + 2 * k] =
              _mm256_madd_epi16(codes[k], load_x(in.codes.data() + size_t(g0 + k) * kBlock + l));
      }
      const __m256i offset = _mm256_slli_epi32(  // 32 * the sub-blocks' activation sums
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums16 + 8 * half)), 5);
      total = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(simd::hsum8(acc), offset)),
                              multipliers[half], total);
    }
  }
  return hsum(total);
}

}  // namespace

bool gguf_gemv_supported(GgufType t) {
  return t == GgufType::kQ8_0 || t == GgufType::kQ4_K || t == GgufType::kQ6_K;
}

Int16Activations prepare_gguf_gemv_input(const float* x, int cols) {
  Int16Activations in = quantize_int16_activations(x, cols, kBlock, false);
  in.sums16.resize(size_t(cols) / 16);
  for (size_t j = 0; j < in.sums16.size(); ++j) {
    int32_t sum = 0;
    for (int i = 0; i < 16; ++i) sum += in.codes[j * 16 + i];
    in.sums16[j] = sum;
  }
  return in;
}

void gguf_gemv_rows(const Int16Activations& in, const WeightMatrix& w, int begin, int end,
                    float* y) {
  gguf_gemv_rows(&in, 1, w, begin, end, y, 0);
}

void gguf_gemv_rows(const Int16Activations* in, int B, const WeightMatrix& w, int begin, int end,
                    float* y, size_t ldy) {
  const size_t row_bytes = w.row_bytes();
  const int ahead = rows_to_prefetch_ahead(row_bytes);
  for (int r = begin; r < end; ++r) {
    const uint8_t* row = w.data + size_t(r) * row_bytes;
    if (r + ahead < end) prefetch_bytes(row + size_t(ahead) * row_bytes, row_bytes);
    switch (w.gguf_type) {
      case GgufType::kQ8_0:
        dot_q8_0_batched(row, w.cols / kBlock, in, B, y + r, ldy);
        break;
      case GgufType::kQ4_K:  // the row stays in L1 for the other activation rows
        for (int b = 0; b < B; ++b) y[size_t(b) * ldy + r] = dot_q4_k(row, w.cols / kSuper, in[b]);
        break;
      case GgufType::kQ6_K:
        for (int b = 0; b < B; ++b) y[size_t(b) * ldy + r] = dot_q6_k(row, w.cols / kSuper, in[b]);
        break;
      default:
        break;
    }
  }
}

}  // namespace qmlx
