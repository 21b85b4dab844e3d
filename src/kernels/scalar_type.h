// ScalarType: the element types activations, caches and unquantized weights are stored in, and
// their conversions to and from float. bf16 is the top half of an IEEE float; f16 uses the F16C
// instructions every x86-64-v3 machine has.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace qmlx {

enum class ScalarType : uint8_t { kF32 = 0, kF16 = 1, kBF16 = 2 };

inline size_t scalar_size(ScalarType t) { return t == ScalarType::kF32 ? 4 : 2; }

inline float bf16_to_float(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even, as torch and numpy-based references do; NaN stays NaN.
inline uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

inline float f16_to_float(uint16_t h) { return _cvtsh_ss(h); }
inline uint16_t float_to_f16(float f) { return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT); }

// Element i of a buffer of type t, as float.
inline float load_scalar(const void* data, ScalarType t, size_t i) {
  switch (t) {
    case ScalarType::kF32:
      return static_cast<const float*>(data)[i];
    case ScalarType::kF16:
      return f16_to_float(static_cast<const uint16_t*>(data)[i]);
    case ScalarType::kBF16:
      return bf16_to_float(static_cast<const uint16_t*>(data)[i]);
  }
  return 0.f;
}

// Converts n values between float and type t.
void convert_to_float(const void* src, ScalarType t, size_t n, float* dst);
void convert_from_float(const float* src, size_t n, ScalarType t, void* dst);

}  // namespace qmlx
