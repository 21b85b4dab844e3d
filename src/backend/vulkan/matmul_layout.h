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
// or a 32-bit word of codes (affine, and GGUF blocks, addressed in bytes through block_window).
size_t weight_element_bytes(const DeviceMatrix& w);

// GGUF rows start at any even byte (a Q6_K row of an odd number of blocks is 2 bytes off a
// word), and the shaders address their blocks in bytes: bytes [begin, end) of `buffer` bound
// as whole words (Context::create_buffer rounds a buffer's size up to a word), and the bytes
// from the binding's start to `begin`. kBlockWindowSlack is what the widening may add.
struct BlockWindow {
  Binding binding;
  uint32_t byte_base = 0;
};
constexpr size_t kBlockWindowSlack = 6;
BlockWindow block_window(const Context& context, const Buffer& buffer, size_t begin, size_t end);

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
