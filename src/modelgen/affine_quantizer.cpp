#include "modelgen/affine_quantizer.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/error.h"

namespace qmlx::modelgen {

bool is_supported_quantization(const QuantParams& params) {
  const bool bits_ok = params.bits == 2 || params.bits == 3 || params.bits == 4 ||
                       params.bits == 5 || params.bits == 6 || params.bits == 8;
  const bool group_ok =
      params.group_size == 32 || params.group_size == 64 || params.group_size == 128;
  return bits_ok && group_ok;
}

int64_t packed_words_per_row(int64_t cols, int bits) { return cols * bits / 32; }

void pack_row(std::span<const uint32_t> values, int bits, std::span<uint32_t> words) {
  std::fill(words.begin(), words.end(), 0u);
  for (size_t i = 0; i < values.size(); ++i) {
    const uint64_t bit = static_cast<uint64_t>(i) * bits;
    const size_t word = bit / 32;
    const unsigned shift = bit % 32;
    words[word] |= values[i] << shift;
    // A 3-, 5- or 6-bit value may straddle two words.
    if (shift + bits > 32) words[word + 1] |= values[i] >> (32 - shift);
  }
}

uint32_t unpack_value(std::span<const uint32_t> words, int bits, int64_t index) {
  const uint64_t bit = static_cast<uint64_t>(index) * bits;
  const size_t word = bit / 32;
  const unsigned shift = bit % 32;
  uint64_t window = words[word];
  if (shift + bits > 32) window |= static_cast<uint64_t>(words[word + 1]) << 32;
  return static_cast<uint32_t>((window >> shift) & ((1u << bits) - 1u));
}

namespace {

struct GroupCode {
  float scale;
  float bias;
};

GroupCode choose_group_code(std::span<const float> group, int bits, TensorDType scale_dtype) {
  const auto [lo, hi] = std::minmax_element(group.begin(), group.end());
  const float levels = static_cast<float>((1 << bits) - 1);
  float scale = (*hi - *lo) / levels;
  if (!(scale > 0.0f)) scale = 1e-8f;  // a constant group: any positive scale is exact
  return {round_to_dtype(scale, scale_dtype), round_to_dtype(*lo, scale_dtype)};
}

}  // namespace

QuantizedMatrix quantize_affine(std::span<const float> weights, int64_t rows, int64_t cols,
                                QuantParams params, TensorDType scale_dtype) {
  if (!is_supported_quantization(params) || cols % params.group_size != 0) {
    throw Error("cannot quantize a [" + std::to_string(rows) + ", " + std::to_string(cols) +
                "] matrix with bits " + std::to_string(params.bits) + ", group size " +
                std::to_string(params.group_size));
  }
  QuantizedMatrix out;
  out.rows = rows;
  out.cols = cols;
  out.params = params;
  const int64_t groups = cols / params.group_size;
  const int64_t words = packed_words_per_row(cols, params.bits);
  out.packed.resize(rows * words);
  out.scales.resize(rows * groups);
  out.biases.resize(rows * groups);
  const float max_level = static_cast<float>((1 << params.bits) - 1);
  std::vector<uint32_t> levels(cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const auto group = weights.subspan(r * cols + g * params.group_size, params.group_size);
      const GroupCode code = choose_group_code(group, params.bits, scale_dtype);
      out.scales[r * groups + g] = code.scale;
      out.biases[r * groups + g] = code.bias;
      for (int i = 0; i < params.group_size; ++i) {
        const float level = std::nearbyint((group[i] - code.bias) / code.scale);
        levels[g * params.group_size + i] =
            static_cast<uint32_t>(std::clamp(level, 0.0f, max_level));
      }
    }
    pack_row(levels, params.bits, std::span(out.packed).subspan(r * words, words));
  }
  return out;
}

std::vector<float> dequantize_affine(const QuantizedMatrix& matrix) {
  const int64_t groups = matrix.cols / matrix.params.group_size;
  const int64_t words = packed_words_per_row(matrix.cols, matrix.params.bits);
  std::vector<float> out(matrix.rows * matrix.cols);
  for (int64_t r = 0; r < matrix.rows; ++r) {
    const auto row_words = std::span(matrix.packed).subspan(r * words, words);
    for (int64_t c = 0; c < matrix.cols; ++c) {
      const int64_t g = r * groups + c / matrix.params.group_size;
      const auto q = static_cast<float>(unpack_value(row_words, matrix.params.bits, c));
      out[r * matrix.cols + c] = matrix.scales[g] * q + matrix.biases[g];
    }
  }
  return out;
}

}  // namespace qmlx::modelgen
