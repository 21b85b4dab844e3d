// quantized_row_dot.glsl over GGUF blocks read in place (gguf_code.glsl): bit-identical to the
// affine row kernels/gguf_affine.h rewrites the blocks to (BITS and GROUP_SIZE are that
// rewrite's). Shared by matmul_gguf.glsl and matmul_by_expert_gguf.glsl; the including shader
// declares binding 2 (its output) and its push constants.
layout(local_size_x = 64) in;

layout(constant_id = 0) const uint BITS = 4;         // the rewrite's: 2, 3, 4, 5, 6 or 8
layout(constant_id = 1) const uint GROUP_SIZE = 32;  // the rewrite's: 16 or 32
layout(constant_id = 2) const uint GGUF_TYPE = 12;   // ggml's type id

layout(std430, binding = 0) readonly buffer Blocks { uint blocks[]; };
layout(std430, binding = 1) readonly buffer Input { float x[]; };

#define GGUF_WORDS blocks
#include "gguf_code.glsl"

// row: (the byte its first block starts at, -, -).
uint row_code(uvec3 row, uint k) { return gguf_code(row.x, k); }
void row_group(uvec3 row, uint g, out float scale, out float bias) {
  gguf_group(row.x, g, scale, bias);
}

#include "quantized_row_dot.glsl"
