#include "kernels/scalar_type.h"

namespace qmlx {

void convert_to_float(const void* src, ScalarType t, size_t n, float* dst) {
  if (t == ScalarType::kF32) {
    std::memcpy(dst, src, n * sizeof(float));
    return;
  }
  const uint16_t* h = static_cast<const uint16_t*>(src);
  size_t i = 0;
  if (t == ScalarType::kF16) {
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(dst + i,
                       _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
    for (; i < n; ++i) dst[i] = f16_to_float(h[i]);
  } else {
    for (; i + 8 <= n; i += 8) {
      __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i)));
      _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
    }
    for (; i < n; ++i) dst[i] = bf16_to_float(h[i]);
  }
}

void convert_from_float(const float* src, size_t n, ScalarType t, void* dst) {
  switch (t) {
    case ScalarType::kF32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case ScalarType::kF16:
      for (size_t i = 0; i < n; ++i) static_cast<uint16_t*>(dst)[i] = float_to_f16(src[i]);
      return;
    case ScalarType::kBF16:
      for (size_t i = 0; i < n; ++i) static_cast<uint16_t*>(dst)[i] = float_to_bf16(src[i]);
      return;
  }
}

}  // namespace qmlx
