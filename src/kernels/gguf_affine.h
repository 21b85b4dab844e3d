// GGUF block rows rewritten as affine rows (kernels/weight_matrix.h's MLX form): every block
// format this engine reads is, per sub-block of 16 or 32 values, w = scale * q + bias with small
// unsigned codes q, scale and bias exact in f32. So one affine kernel (the Vulkan backend's)
// computes them all, value for value as ggml decodes them: scale * q + bias, one fma, rounds the
// exact product once, as ggml's d * code does (codes shifted to unsigned move their offset into
// the bias, -8 d for Q4_0, -128 d for Q8_0, -32 d * sc for Q6_K; only the sign of a zero may
// differ).
//
//   type   bits  group  scale, bias      (stored as)     bits per weight (GGUF -> affine)
//   Q4_0    4     32    d, -8 d          (f16)           4.5 -> 5
//   Q4_1    4     32    d, m             (f16)           5   -> 5
//   Q5_0    5     32    d, -16 d         (f16)           5.5 -> 6
//   Q5_1    5     32    d, m             (f16)           6   -> 6
//   Q8_0    8     32    d, -128 d        (f16)           8.5 -> 9
//   Q2_K    2     16    d * sc, -dmin * m   (f32)        2.6 -> 6
//   Q3_K    3     16    d * sc, -4 d * sc   (f32)        3.4 -> 7
//   Q4_K    4     32    d * sc, -dmin * m   (f32)        4.5 -> 6
//   Q5_K    5     32    d * sc, -dmin * m   (f32)        5.5 -> 7
//   Q6_K    6     16    d * sc, -32 d * sc  (f32)        6.6 -> 10
//
// The 32-value formats keep f16 scales and biases (d and m are f16, and -8 d, -16 d, -128 d are
// too unless they overflow, which is an error); the K-quants' products d * sc need f32. The
// Vulkan backend does not pay that growth: its GGUF kernels (shaders/gguf_code.glsl) read the
// blocks in place and compute these same codes, scales and biases from them, so they give the
// affine kernel's bits over the rewrite (tests/backend/matmul_test.cpp holds them to it).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/weight_matrix.h"

namespace qmlx {

// A matrix with its own storage (view points into the vectors: move, do not copy).
struct OwnedMatrix {
  WeightMatrix view;
  std::vector<uint8_t> data, scales, biases;
};

// True for the GGUF block types gguf_to_affine rewrites (all quantized types this engine reads).
bool gguf_affine_supported(GgufType t);

// The codes' width and group size gguf_to_affine gives type t.
int gguf_affine_bits(GgufType t);
int gguf_affine_group_size(GgufType t);
ScalarType gguf_affine_scale_type(GgufType t);

// One Q8_0 block (f16 d, 32 int8 q) as 8-bit affine: codes q + 128, scale d, bias -128 d (exact
// in f16 while |d| < 512). The one statement of that rewrite: gguf_to_affine's, and the CPU's
// Q8_0 tiling (affine_tiles.h).
void q8_0_block_as_affine(const uint8_t* block, uint8_t* codes, float& scale, float& bias);

// w (a GGUF block matrix of a supported type, not tiled) as affine rows. Throws qmlx::Error for
// other formats, and for a 32-value block whose scale times its offset overflows f16.
OwnedMatrix gguf_to_affine(const WeightMatrix& w);

}  // namespace qmlx
