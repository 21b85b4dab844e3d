// How a DeviceMatrix lies in its buffers and which shader computes with it: what the plain
// matmul (matmul.cpp) and the matmul by expert id (matmul_by_expert.cpp) both need to size
// their binding windows and pick their pipelines, so the two read a matrix the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/vulkan/matmul.h"

namespace qmlx::vulkan {

// Bytes of one element of the data buffer as the shaders index it: a weight (f32, f16, bf16)
// or a 32-bit word of codes (affine).
size_t weight_element_bytes(const DeviceMatrix& w);

// Bytes of weights (or codes) in one row.
size_t matrix_row_bytes(const DeviceMatrix& w);

// Bytes of scales (and of biases) of one row; 0 for float weights.
size_t matrix_meta_row_bytes(const DeviceMatrix& w);

// Outputs one workgroup computes: matmul_float_dot.glsl gives each 16 (f32) or 8 (16-bit)
// lanes of its 64; matmul_affine_dot.glsl gives one output all 64.
size_t matmul_rows_per_group(const DeviceMatrix& w);

// The specialization constants of the matmul shaders for w's format.
std::vector<uint32_t> matmul_specialization(const DeviceMatrix& w);

}  // namespace qmlx::vulkan
