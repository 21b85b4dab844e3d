#include "modelgen/tensor_dtype.h"

#include <immintrin.h>
#include <bit>
#include <cstring>

#include "base/error.h"

namespace qmlx::modelgen {

size_t dtype_bytes(TensorDType dtype) {
  switch (dtype) {
    case TensorDType::kF16:
    case TensorDType::kBF16:
      return 2;
    case TensorDType::kF32:
    case TensorDType::kU32:
      return 4;
  }
  return 4;
}

const char* dtype_safetensors_name(TensorDType dtype) {
  switch (dtype) {
    case TensorDType::kF32:
      return "F32";
    case TensorDType::kF16:
      return "F16";
    case TensorDType::kBF16:
      return "BF16";
    case TensorDType::kU32:
      return "U32";
  }
  return "?";
}

TensorDType parse_float_dtype(const std::string& name) {
  if (name == "f32" || name == "float32") return TensorDType::kF32;
  if (name == "bf16" || name == "bfloat16") return TensorDType::kBF16;
  if (name == "f16" || name == "float16") return TensorDType::kF16;
  throw Error("unsupported --dtype '" + name + "' (expected f32, bf16 or f16)");
}

uint16_t float_to_bf16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  // Round to nearest, ties to even, on the 16 bits that are dropped.
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float bf16_to_float(uint16_t bits) { return std::bit_cast<float>(uint32_t{bits} << 16); }

uint16_t float_to_f16(float value) { return _cvtss_sh(value, _MM_FROUND_TO_NEAREST_INT); }

float f16_to_float(uint16_t bits) { return _cvtsh_ss(bits); }

float round_to_dtype(float value, TensorDType dtype) {
  switch (dtype) {
    case TensorDType::kBF16:
      return bf16_to_float(float_to_bf16(value));
    case TensorDType::kF16:
      return f16_to_float(float_to_f16(value));
    default:
      return value;
  }
}

void store_float(float value, TensorDType dtype, uint8_t* out) {
  if (dtype == TensorDType::kF32) {
    std::memcpy(out, &value, 4);
    return;
  }
  const uint16_t half = dtype == TensorDType::kBF16 ? float_to_bf16(value) : float_to_f16(value);
  std::memcpy(out, &half, 2);
}

}  // namespace qmlx::modelgen
