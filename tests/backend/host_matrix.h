// Random weight matrices in the formats the CPU kernels read (kernels/weight_matrix.h), with
// their storage, for tests that run the same weights on both sides.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/scalar_type.h"
#include "kernels/weight_matrix.h"

namespace qmlx::vulkan::testing {

// A weight matrix with its storage (w points into the vectors: move, do not copy).
struct HostMatrix {
  WeightMatrix w;
  std::vector<uint8_t> data, scales, biases;
};

std::vector<uint8_t> encode(const std::vector<float>& v, ScalarType t);

// f32, f16 or bf16 weights uniform in [-0.5, 0.5] (scaled by `scale`).
HostMatrix float_matrix(WeightFormat format, int rows, int cols, uint64_t seed, float scale = 1.f);

// Random codes, scales in [0.001, 0.02] and biases in [-0.1, 0.1] (both scaled by `scale`).
HostMatrix affine_matrix(int bits, int group_size, ScalarType scale_type, int rows, int cols,
                         uint64_t seed, float scale = 1.f);

// Random well-formed blocks of a quantized GGUF type (tests/kernels/gguf_block_samples.h).
HostMatrix gguf_matrix(GgufType type, int rows, int cols, uint64_t seed);

}  // namespace qmlx::vulkan::testing
