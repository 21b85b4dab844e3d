// The arithmetic of one matmul_affine output, shared by matmul_affine.glsl (rows of one
// matrix) and matmul_by_expert_affine.glsl (rows of the matrix a router picked), so an
// expert's row is bit-identical to the plain matmul of that expert's matrix.
//
// sum_k W[row][k] * x[k] for MLX affine-quantized weights (kernels/weight_matrix.h) of 2 to 8
// bits, and GGUF blocks rewritten in that form (kernels/gguf_affine.h): a row is an LSB-first stream
// of BITS-bit codes q packed in uint32 words, and W[row][k] = scale[g] * q + bias[g] with
// g = k / GROUP_SIZE, computed as one fma exactly as the CPU dequantizes. One workgroup
// computes one output: its 64 invocations take one step of LANE_CODES columns each in turn (a
// word of 16, 8 or 4 codes for 2, 4 and 8 bits; 32 codes, BITS whole words, for 3, 5 and 6),
// accumulate with fma in column order and meet in a fixed tree, so results do not depend on the
// batch. The including shader declares binding 4 (its output) and its push constants.
#include "fma.glsl"
#include "scalar_load.glsl"
#include "workgroup_sum.glsl"

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

// Columns one invocation takes per step, the words they fill, and how many of them share a
// scale (a step never straddles a group boundary mid-way: groups are multiples of SUB).
const bool WHOLE_WORDS = (32u % BITS) == 0u;
const uint LANE_CODES = WHOLE_WORDS ? 32u / BITS : 32u;
const uint LANE_WORDS = WHOLE_WORDS ? 1u : BITS;
const uint SUB = LANE_CODES < GROUP_SIZE ? LANE_CODES : GROUP_SIZE;

float scale_at(uint i) { return widen_scalar(scales[scalar_word(i, SCALE_TYPE)], i, SCALE_TYPE); }
float bias_at(uint i) { return widen_scalar(biases[scalar_word(i, SCALE_TYPE)], i, SCALE_TYPE); }

// The dot product of the row whose codes start at word code_row, whose scales and biases start
// at elements scale_row and bias_row, with the inputs from element x_row, `cols` long. Every
// invocation of the workgroup calls it and gets the result.
float affine_row_dot(uint code_row, uint scale_row, uint bias_row, uint x_row, uint cols) {
  const uint lane = gl_LocalInvocationID.x;
  const uint steps = cols / LANE_CODES;
  float acc = 0.0;
  for (uint step = lane; step < steps; step += 64u) {
    const uint w0 = code_row + step * LANE_WORDS;
    const uint k0 = step * LANE_CODES;
    for (uint h = 0u; h < LANE_CODES; h += SUB) {
      const uint g = (k0 + h) / GROUP_SIZE;
      const float scale = scale_at(scale_row + g);
      const float bias = bias_at(bias_row + g);
      for (uint c = h; c < h + SUB; ++c) {
        const float q = float(affine_code(w0, c));
        acc = FMA(FMA(scale, q, bias), x[x_row + k0 + c], acc);
      }
    }
  }
  return workgroup_sum(acc);
}
