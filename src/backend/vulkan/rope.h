// RoPE on the device (shaders/rope.comp): kernels/rope.h's apply_rope, rotate-half over the
// first rot_dim dimensions of each head, each row at its own position. The angles come from a
// table of cos/sin per position that the host fills with kernels/rope.h's rope_angles (double
// precision, which shaders have no cos/sin for), so the rotation uses the CPU's very factors
// and is bit-identical to it on devices with a correctly rounded fma (lavapipe): the shader
// fuses exactly the products GCC fuses in apply_rope (rope.comp says which).
#pragma once

#include <cstdint>

#include "backend/vulkan/command_recorder.h"

namespace qmlx::vulkan {

// cos then sin of the rot_dim / 2 angles, for each position in [0, positions).
struct RopeTable {
  Buffer data;
  int64_t positions = 0;
  int rot_dim = 0;
};

// Throws qmlx::Error when the table would be larger than one binding (128 MiB on lavapipe:
// 524,288 positions at rot_dim 64).
RopeTable upload_rope_table(Context& context, int64_t positions, int rot_dim, double theta);

// x: [rows][heads][head_dim] floats, rotated in place; positions: rows int32 values, each
// below table.positions, or -1 - j for row j of `own_angles` ([j][cos | sin], rot_dim floats
// per row): angles no position has, as Qwen3.5's M-RoPE gives an image's rows (the host fills
// them with kernels/rope.h's mrope_angles). Without own_angles every position is a table row.
void record_rope(CommandRecorder& recorder, const Buffer& x, const Buffer& positions,
                 const RopeTable& table, int rows, int heads, int head_dim,
                 const Buffer* own_angles = nullptr);

}  // namespace qmlx::vulkan
