// Test helper: random but well-formed blocks of a GGUF type (random code bytes, with the f16
// scale fields set to finite values of moderate size so decoded values are comparable).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/gguf_blocks.h"
#include "kernels/scalar_type.h"
#include "kernels/weight_matrix.h"

namespace qmlx::testing {

// Byte offsets of the f16 fields (d, and dmin/m where present) inside one block, from
// ggml-common.h.
inline std::vector<int> gguf_half_offsets(GgufType t) {
  switch (t) {
    case GgufType::kQ4_1:
    case GgufType::kQ5_1:
    case GgufType::kQ4_K:
    case GgufType::kQ5_K:
      return {0, 2};
    case GgufType::kQ2_K:
      return {80, 82};
    case GgufType::kQ3_K:
      return {108};
    case GgufType::kQ6_K:
      return {208};
    default:
      return {0};
  }
}

inline std::vector<uint8_t> random_gguf_blocks(GgufType t, size_t n_values, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> bytes(gguf_bytes(t, n_values));
  for (uint8_t& b : bytes) b = uint8_t(rng());
  if (!gguf_is_quantized(t)) {
    std::normal_distribution<float> d(0.f, 1.f);
    std::vector<float> v(n_values);
    for (float& x : v) x = d(rng);
    convert_from_float(v.data(), n_values,
                       t == GgufType::kF32   ? ScalarType::kF32
                       : t == GgufType::kF16 ? ScalarType::kF16
                                             : ScalarType::kBF16,
                       bytes.data());
    return bytes;
  }
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (size_t b = 0; b < bytes.size(); b += gguf_block_bytes(t))
    for (int off : gguf_half_offsets(t)) {
      uint16_t h = float_to_f16(scale(rng));
      bytes[b + off] = uint8_t(h & 0xff);
      bytes[b + off + 1] = uint8_t(h >> 8);
    }
  return bytes;
}

// A [rows, cols] GGUF matrix of type t over `blocks` (which must outlive it).
inline WeightMatrix gguf_view(GgufType t, int rows, int cols, const std::vector<uint8_t>& blocks) {
  WeightMatrix m;
  m.format = WeightFormat::kGguf;
  m.gguf_type = t;
  m.rows = rows;
  m.cols = cols;
  m.data = blocks.data();
  return m;
}

}  // namespace qmlx::testing
