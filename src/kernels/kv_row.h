// KvType: how the K/V cache stores one KV head's row (one position, one head, D values), and the
// functions that write and read such a row. Plain rows are D values of f32, f16 or bf16. An int8
// row is D signed codes followed by one float32 scale, value = code * scale, quantized
// symmetrically per row and head: scale = max|x| / 127, code = round-to-nearest(x / scale).
// The scale is float32 (4 bytes per 256 values, 1.5% of the row) rather than bf16: a bf16 scale
// would add up to 0.4% relative error to the whole row, as much as the int8 step itself.
// A cache row of Nkv heads is Nkv such head rows back to back: one contiguous plain buffer.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace qmlx {

enum class KvType : uint8_t { kF32 = 0, kF16 = 1, kBF16 = 2, kInt8 = 3 };

// Bytes of one head row of D values.
size_t kv_head_bytes(KvType t, int D);

// Writes x[0, D) as one head row at dst (kv_head_bytes(t, D) bytes).
void store_kv_head(const float* x, int D, KvType t, void* dst);

// The head row at src as D floats: src itself when t is f32, else decoded into buffer[0, D).
const float* load_kv_head(const void* src, int D, KvType t, float* buffer);

// For kernels that read rows in place, specialised per type: eight values of a head row from
// element d on (int8: the codes, not yet scaled), and the factor they are scaled by (1 for the
// plain types), so a dot product or a weighted sum can apply it once per row.
template <KvType T>
inline __m256 load_kv8(const uint8_t* row, int d) {
  if constexpr (T == KvType::kF32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + d);
  } else if constexpr (T == KvType::kBF16) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * size_t(d)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  } else if constexpr (T == KvType::kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * size_t(d))));
  } else {
    const __m128i codes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + d));
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(codes));
  }
}

template <KvType T>
inline float kv_row_scale(const uint8_t* row, int D) {
  if constexpr (T == KvType::kInt8) {
    float scale;
    std::memcpy(&scale, row + D, sizeof(scale));
    return scale;
  } else {
    return 1.f;
  }
}

}  // namespace qmlx
