// TensorDType: the element types the generator writes into safetensors files, and the
// conversions from float32 to the 16-bit formats. Rounding is to nearest-even, as
// PyTorch, MLX and numpy do, so a file written here matches one written by those tools.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace qmlx::modelgen {

enum class TensorDType { kF32, kF16, kBF16, kU32 };

size_t dtype_bytes(TensorDType dtype);
// The safetensors spelling: "F32", "F16", "BF16", "U32".
const char* dtype_safetensors_name(TensorDType dtype);
// Parses "f32" | "bf16" | "f16" (the --dtype flag); throws qmlx::Error otherwise.
TensorDType parse_float_dtype(const std::string& name);

uint16_t float_to_bf16(float value);
float bf16_to_float(uint16_t bits);
uint16_t float_to_f16(float value);
float f16_to_float(uint16_t bits);

// value as it reads back after being stored in `dtype` (identity for F32).
float round_to_dtype(float value, TensorDType dtype);
// Stores `value` in `dtype` at `out` (little-endian; F32, F16 or BF16).
void store_float(float value, TensorDType dtype, uint8_t* out);

}  // namespace qmlx::modelgen
