#include "kernels/affine_gemv.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "kernels/affine_codes.h"
#include "kernels/affine_tiles.h"
#include "kernels/prefetch.h"
#include "kernels/row_passes.h"
#include "kernels/simd.h"

namespace qmlx {
namespace {

constexpr int kChunk = 32;  // columns per 16 bytes of 4-bit codes (see Int16Activations)

inline __m256i load256(const int16_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Two int16 activation codes read as one int32 (the pair a vpmaddwd lane multiplies).
typedef int32_t __attribute__((may_alias)) aliased_int32;

// The exact sum of 8 int32 lanes.
inline int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

namespace avx2 {
constexpr bool kVnni512 = false;
#include "kernels/affine_gemv_rows.inc"
#include "kernels/affine_tile_gemv.inc"
}  // namespace avx2

}  // namespace

// The same kernel with AVX-512 VNNI integer dots, compiled for that instruction set only; it
// runs where the CPU has it (gemv_isa()).
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni")
// GCC 12's avx512fintrin.h builds its extracts and shuffles on a deliberately undefined vector,
// which -Wmaybe-uninitialized reports from inside the header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
namespace {
namespace avx512_vnni {
constexpr bool kVnni512 = true;

// The 16 int32 lanes of a VNNI accumulator as 8 partial sums with the same total.
inline __m256i fold(__m512i v) {
  return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

#include "kernels/affine_gemv_rows.inc"
#include "kernels/affine_tile_gemv.inc"
}  // namespace avx512_vnni
}  // namespace
#pragma GCC diagnostic pop
#pragma GCC pop_options

namespace {

GemvIsa detect_gemv_isa() {
  // QMLX_GEMV_ISA=avx2 keeps the AVX2 kernel on an AVX-512 machine (to compare the two).
  const char* forced = std::getenv("QMLX_GEMV_ISA");
  if (forced != nullptr && std::string_view(forced) == "avx2") return GemvIsa::kAvx2;
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni")
             ? GemvIsa::kAvx512Vnni
             : GemvIsa::kAvx2;
}

// Row-major 4-bit rows hold each 32 columns' even codes in low nibbles; tiled ones pair
// consecutive columns (kernels/affine_tiles.h).
bool nibble_order(const WeightMatrix& w) { return w.bits == 4 && !w.tiled; }

}  // namespace

Int16Activations prepare_affine_gemv_input(const float* x, const WeightMatrix& w) {
  return quantize_int16_activations(x, w.cols, w.group_size, nibble_order(w));
}

bool same_affine_gemv_input(const WeightMatrix& a, const WeightMatrix& b) {
  return a.cols == b.cols && a.group_size == b.group_size && nibble_order(a) == nibble_order(b);
}

void affine_gemv_rows(const Int16Activations& in, const WeightMatrix& w, int begin, int end,
                      float* y) {
  affine_gemv_rows(&in, 1, w, begin, end, y, 0);
}

GemvIsa gemv_isa() {
  static const GemvIsa isa = detect_gemv_isa();
  return isa;
}

const char* gemv_isa_name(GemvIsa isa) {
  return isa == GemvIsa::kAvx512Vnni ? "avx512-vnni" : "avx2";
}

void affine_gemv_rows(const Int16Activations* in, int B, const WeightMatrix& w, int begin, int end,
                      float* y, size_t ldy) {
  affine_gemv_rows(in, B, w, begin, end, y, ldy, gemv_isa());
}

void affine_gemv_rows(const Int16Activations* in, int B, const WeightMatrix& w, int begin, int end,
                      float* y, size_t ldy, GemvIsa isa) {
  if (w.tiled) {
    if (isa == GemvIsa::kAvx512Vnni)
      return avx512_vnni::tiled_rows_for_bits(in, B, w, begin, end, y, ldy);
    return avx2::tiled_rows_for_bits(in, B, w, begin, end, y, ldy);
  }
  if (isa == GemvIsa::kAvx512Vnni) return avx512_vnni::rows_for_bits(in, B, w, begin, end, y, ldy);
  avx2::rows_for_bits(in, B, w, begin, end, y, ldy);
}

}  // namespace qmlx
