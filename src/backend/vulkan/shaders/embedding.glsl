// The body of embedding.comp and embedding_exact_fma.comp (fma.glsl says why two).
// out[t] = row ids[t] of the table as floats (embedding.h), as the CPU's dequantize_rows:
//   FORMAT 0, 1, 2: f32, f16, bf16 rows, widened exactly (scalar_load.glsl);
//   FORMAT 3: MLX affine rows of BITS-bit codes q, LSB first in uint32 words (affine_code.glsl),
//             each weight scale * q + bias as one fma (affine_codes.cpp's _mm256_fmadd_ps);
//   FORMAT 4: GGUF blocks of type GGUF_TYPE read in place (gguf_code.glsl), each weight as
//             FORMAT 3 computes it from the affine rewrite of those blocks.
// One workgroup per token; a dispatch covers table rows [first_row, first_row + rows) and
// writes only the tokens whose ids fall there (embedding.cpp splits large tables so).
#include "fma.glsl"
#include "scalar_load.glsl"

layout(local_size_x = 64) in;

layout(constant_id = 0) const uint FORMAT = 0;       // 0 f32, 1 f16, 2 bf16, 3 affine
layout(constant_id = 1) const uint BITS = 4;         // affine: 2, 3, 4, 5, 6 or 8
layout(constant_id = 2) const uint GROUP_SIZE = 64;  // affine: 16, 32, 64 or 128
layout(constant_id = 3) const uint SCALE_TYPE = 1;   // affine: 0 f32, 1 f16, 2 bf16
layout(constant_id = 4) const uint GGUF_TYPE = 12;   // GGUF: ggml's type id

layout(std430, binding = 0) readonly buffer Table { uint table[]; };
layout(std430, binding = 1) readonly buffer Scales { uint scales[]; };
layout(std430, binding = 2) readonly buffer Biases { uint biases[]; };
layout(std430, binding = 3) readonly buffer Ids { int ids[]; };
layout(std430, binding = 4) writeonly buffer Output { float y[]; };

layout(push_constant) uniform Push {
  uint first_row;   // the table row at element table_base
  uint rows;        // table rows bound
  uint cols;
  uint table_base;  // elements (affine: words; GGUF: bytes) before row first_row
  uint scale_base;  // affine: scale (bias) elements before row first_row
  uint bias_base;
  uint id_base;     // ids before token 0 of this dispatch
  uint out_base;    // floats before token 0's output row
} p;

#define AFFINE_WORDS table
#include "affine_code.glsl"
#define GGUF_WORDS table
#include "gguf_code.glsl"

float gguf_weight(uint row, uint c) {
  const uint start = p.table_base + row * (p.cols / gguf_block_values()) * gguf_block_bytes();
  float scale, bias;
  gguf_group(start, c / gguf_group_values(), scale, bias);
  return FMA(scale, float(gguf_code(start, c)), bias);
}

float affine_weight(uint row, uint c) {
  const float q = float(affine_code(p.table_base + row * affine_row_words(p.cols), c));
  const uint g = p.scale_base + row * (p.cols / GROUP_SIZE) + c / GROUP_SIZE;
  const uint h = p.bias_base + row * (p.cols / GROUP_SIZE) + c / GROUP_SIZE;
  const float scale = widen_scalar(scales[scalar_word(g, SCALE_TYPE)], g, SCALE_TYPE);
  const float bias = widen_scalar(biases[scalar_word(h, SCALE_TYPE)], h, SCALE_TYPE);
  return FMA(scale, q, bias);
}

void main() {
  const uint token = gl_WorkGroupID.x;
  const int id = ids[p.id_base + token];
  // Unsigned: ids below first_row, and negative ones, wrap to far beyond `rows`.
  const uint row = uint(id) - p.first_row;
  if (row >= p.rows) return;
  const uint out_row = p.out_base + token * p.cols;
  for (uint c = gl_LocalInvocationID.x; c < p.cols; c += 64u) {
    if (FORMAT == 3u) {
      y[out_row + c] = affine_weight(row, c);
    } else if (FORMAT == 4u) {
      y[out_row + c] = gguf_weight(row, c);
    } else {
      const uint i = p.table_base + row * p.cols + c;
      y[out_row + c] = widen_scalar(table[scalar_word(i, FORMAT)], i, FORMAT);
    }
  }
}
