// MLX affine quantization (mode "affine"): each row is cut into groups of `group_size`
// columns; a group stores one scale and one bias and every weight becomes an unsigned
// `bits`-bit integer q with w ≈ scale * q + bias. The integers of a row form one
// little-endian, LSB-first bit stream (element c at bits [c*bits, (c+1)*bits)) packed into
// uint32 words, which is how MLX lays out 2/3/4/5/6/8-bit weights (model-spec §5).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "modelgen/tensor_dtype.h"

namespace qmlx::modelgen {

struct QuantParams {
  int bits = 4;
  int group_size = 64;
};

struct QuantizedMatrix {
  int64_t rows = 0;
  int64_t cols = 0;
  QuantParams params;
  std::vector<uint32_t> packed;  // rows * packed_words_per_row(cols, bits)
  std::vector<float> scales;     // rows * cols / group_size, already rounded to scale dtype
  std::vector<float> biases;     // same shape as scales
};

bool is_supported_quantization(const QuantParams& params);
int64_t packed_words_per_row(int64_t cols, int bits);

// Packs unsigned values (each < 2^bits) of one row into `words` (zeroed first).
void pack_row(std::span<const uint32_t> values, int bits, std::span<uint32_t> words);
// Element `index` of a row packed by pack_row.
uint32_t unpack_value(std::span<const uint32_t> words, int bits, int64_t index);

// Quantizes a row-major [rows, cols] matrix; cols must be a multiple of group_size.
// Scales and biases are rounded to `scale_dtype` before the integers are chosen, so
// dequantizing with the stored values reproduces the quantizer's own error bound.
QuantizedMatrix quantize_affine(std::span<const float> weights, int64_t rows, int64_t cols,
                                QuantParams params, TensorDType scale_dtype);
std::vector<float> dequantize_affine(const QuantizedMatrix& matrix);

}  // namespace qmlx::modelgen
