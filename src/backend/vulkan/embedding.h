// Embedding gather on the device: out[t] = row ids[t] of the token-embedding table as floats,
// the Vulkan counterpart of Model::embed (dequantize_rows, one row per token) for f32, f16 and
// bf16 tables, MLX affine ones and GGUF blocks read in place (shaders/embedding.comp). Float rows
// are widened exactly; affine rows, and GGUF blocks as their affine rewrite, are dequantized
// with the CPU's one fma per weight, so every format is bit-identical to the CPU on devices with
// a correctly rounded fma (lavapipe).
//
// The token ids live in a device buffer, so they may come from the host or from a pick made on
// the device. A table larger than one storage binding (a 248k-row embedding: 485 MiB in bf16,
// against lavapipe's 128 MiB) is gathered in row ranges that each fit, one dispatch per range;
// each dispatch writes the rows of the tokens whose ids fall in its range.
#pragma once

#include "backend/vulkan/command_recorder.h"
#include "backend/vulkan/matmul.h"

namespace qmlx::vulkan {

// ids: [T] int32 in [0, table.rows) (callers check them, as Model::embed does; an id outside
// leaves its row unwritten, never read out of bounds). out: [T][table.cols] floats. Both from
// offset 0. The table comes from upload_matrix.
void record_embedding(CommandRecorder& recorder, const DeviceMatrix& table, const Buffer& ids,
                      int T, const Buffer& out);

}  // namespace qmlx::vulkan
