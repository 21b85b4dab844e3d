// Matmul on the device: y[t][o] = sum_k W[o][k] * x[t][k], the Vulkan counterpart of
// kernels/matmul.h for f32, f16 and bf16 weights (shaders/matmul_float.comp), MLX affine 2- to
// 8-bit quantization (shaders/matmul_affine.comp) and GGUF blocks, kept as they are stored and
// read in place (shaders/matmul_gguf.comp) with the arithmetic of their affine rewrite
// (kernels/gguf_affine.h), bit for bit, without that rewrite's memory (a Q4_K weight takes 4.5
// bits, rewritten 6; Q6_K 6.56, rewritten 10). Every token's row is computed the same way
// whatever the batch, so it is bit-identical alone or in one.
//  - float weights follow the CPU's generated-row arithmetic (vec::dot, vec::dot_typed) lane
//    for lane: bit-identical to it where the device has a true fma (lavapipe);
//  - affine weights are dequantized exactly as the CPU does (one fma per weight), then each
//    output is 64 fma chains over interleaved columns summed in a fixed tree. The CPU's prompt
//    rows sum in one chain and its generated rows round the activations to int16 first, so the
//    two agree to rounding (the tests bound the difference), not bit for bit.
//
// Matrices larger than a storage binding may be (128 MiB on lavapipe) are processed in row
// ranges that each fit, one dispatch per range; all of a matrix still lives in one buffer.
#pragma once

#include <string>

#include "backend/vulkan/command_recorder.h"
#include "kernels/weight_matrix.h"

namespace qmlx::vulkan {

// A weight matrix in device memory, in its stored format. GGUF blocks keep their type, and the
// bits and group size of their affine rewrite, whose arithmetic the kernels follow.
struct DeviceMatrix {
  WeightFormat format = WeightFormat::kF32;
  GgufType gguf_type = GgufType::kF32;  // GGUF only
  int rows = 0;
  int cols = 0;
  int bits = 0;
  int group_size = 0;
  ScalarType scale_type = ScalarType::kF32;
  Buffer data;
  Buffer scales;  // affine only
  Buffer biases;
};

// Bytes `m`'s buffers hold (data, scales and biases, as allocated).
size_t allocated_bytes(const DeviceMatrix& m);

// Bytes `w` takes in device memory (data, scales and biases; GGUF blocks as stored). Throws
// qmlx::Error for unsupported formats.
size_t device_matrix_bytes(const WeightMatrix& w);

// True when the device kernels handle `w`; otherwise *why says what is missing.
bool device_matmul_supports(const WeightMatrix& w, std::string* why);

// Copies `w` (row-major, not tiled) to the device. Throws qmlx::Error for unsupported formats.
DeviceMatrix upload_matrix(Context& context, const WeightMatrix& w);

// upload_matrix in two steps, for matrices assembled from several (matmul_by_expert.h's
// stacked experts): a matrix of `rows` rows in the format and width of `like`, its contents
// undefined; then w's rows copied into rows [first_row, first_row + w.rows) of `d` (w in d's
// format and width). Both throw qmlx::Error for unsupported formats.
DeviceMatrix create_matrix(Context& context, const WeightMatrix& like, int rows);
void upload_rows(Context& context, const DeviceMatrix& d, int first_row, const WeightMatrix& w);

// x: [T][w.cols] floats, y: [T][w.rows] floats (overwritten), both from offset 0.
void record_matmul(CommandRecorder& recorder, const DeviceMatrix& w, const Buffer& x, int T,
                   const Buffer& y);

}  // namespace qmlx::vulkan
