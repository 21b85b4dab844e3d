#include "kernels/kv_row.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/scalar_type.h"

namespace qmlx {
namespace {

constexpr float kInt8Max = 127.f;

ScalarType plain_type(KvType t) {
  switch (t) {
    case KvType::kF16:
      return ScalarType::kF16;
    case KvType::kBF16:
      return ScalarType::kBF16;
    case KvType::kF32:
    case KvType::kInt8:
      break;
  }
  return ScalarType::kF32;
}

void quantize_int8(const float* x, int D, void* dst) {
  float max_abs = 0.f;
  for (int i = 0; i < D; ++i) max_abs = std::max(max_abs, std::abs(x[i]));
  const float scale = max_abs / kInt8Max;
  int8_t* codes = static_cast<int8_t*>(dst);
  for (int i = 0; i < D; ++i) {
    const float q = scale > 0.f ? std::nearbyint(x[i] / scale) : 0.f;
    codes[i] = int8_t(std::clamp(q, -kInt8Max, kInt8Max));
  }
  std::memcpy(codes + D, &scale, sizeof(scale));
}

void dequantize_int8(const void* src, int D, float* out) {
  const uint8_t* row = static_cast<const uint8_t*>(src);
  const float scale = kv_row_scale<KvType::kInt8>(row, D);
  const __m256 s = _mm256_set1_ps(scale);
  int d = 0;
  for (; d + 8 <= D; d += 8)
    _mm256_storeu_ps(out + d, _mm256_mul_ps(load_kv8<KvType::kInt8>(row, d), s));
  for (; d < D; ++d) out[d] = float(int8_t(row[d])) * scale;
}

}  // namespace

size_t kv_head_bytes(KvType t, int D) {
  if (t == KvType::kInt8) return size_t(D) + sizeof(float);
  return size_t(D) * scalar_size(plain_type(t));
}

void store_kv_head(const float* x, int D, KvType t, void* dst) {
  if (t == KvType::kInt8) return quantize_int8(x, D, dst);
  convert_from_float(x, size_t(D), plain_type(t), dst);
}

const float* load_kv_head(const void* src, int D, KvType t, float* buffer) {
  switch (t) {
    case KvType::kF32:
      return static_cast<const float*>(src);
    case KvType::kInt8:
      dequantize_int8(src, D, buffer);
      return buffer;
    case KvType::kF16:
    case KvType::kBF16:
      break;
  }
  convert_to_float(src, plain_type(t), size_t(D), buffer);
  return buffer;
}

}  // namespace qmlx
