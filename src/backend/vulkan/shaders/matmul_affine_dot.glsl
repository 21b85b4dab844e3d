// quantized_row_dot.glsl over MLX affine rows (kernels/weight_matrix.h) of 2 to 8 bits: a row
// is an LSB-first stream of BITS-bit codes packed in uint32 words, with a scale and a bias per
// GROUP_SIZE columns. Shared by matmul_affine.glsl (rows of one matrix) and
// matmul_by_expert_affine.glsl (rows of the matrix a router picked). The including shader
// declares binding 4 (its output) and its push constants.
#include "scalar_load.glsl"

layout(local_size_x = 64) in;

layout(constant_id = 0) const uint BITS = 4;         // 2, 3, 4, 5, 6 or 8
layout(constant_id = 1) const uint GROUP_SIZE = 64;  // 16 (GGUF K-quants), 32, 64 or 128
layout(constant_id = 2) const uint SCALE_TYPE = 1;   // 0 f32, 1 f16, 2 bf16

layout(std430, binding = 0) readonly buffer Codes { uint codes[]; };
layout(std430, binding = 1) readonly buffer Scales { uint scales[]; };
layout(std430, binding = 2) readonly buffer Biases { uint biases[]; };
layout(std430, binding = 3) readonly buffer Input { float x[]; };

#define AFFINE_WORDS codes
#include "affine_code.glsl"

// row: (first word of its codes, first scale element, first bias element).
uint row_code(uvec3 row, uint k) { return affine_code(row.x, k); }
void row_group(uvec3 row, uint g, out float scale, out float bias) {
  scale = widen_scalar(scales[scalar_word(row.y + g, SCALE_TYPE)], row.y + g, SCALE_TYPE);
  bias = widen_scalar(biases[scalar_word(row.z + g, SCALE_TYPE)], row.z + g, SCALE_TYPE);
}

#include "quantized_row_dot.glsl"

float affine_row_dot(uint code_row, uint scale_row, uint bias_row, uint x_row, uint cols) {
  return quantized_row_dot(uvec3(code_row, scale_row, bias_row), x_row, cols);
}
