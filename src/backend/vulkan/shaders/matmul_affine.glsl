// The body of matmul_affine.comp and matmul_affine_exact_fma.comp (fma.glsl says why two).
// y[t][o] = sum_k W[o][k] * x[t][k] for MLX affine-quantized weights (kernels/weight_matrix.h):
// row o is an LSB-first stream of BITS-bit codes q packed in uint32 words, and
// W[o][k] = scale[o][g] * q + bias[o][g] with g = k / GROUP_SIZE, computed as one fma exactly
// as the CPU dequantizes. One workgroup computes one output of one token: its 64 invocations
// take one word (8 or 4 codes) each in turn, accumulate with fma in column order and meet in a
// fixed tree, so results do not depend on the batch.
#include "fma.glsl"
#include "scalar_load.glsl"

layout(local_size_x = 64) in;

layout(constant_id = 0) const uint BITS = 4;         // 4 or 8
layout(constant_id = 1) const uint GROUP_SIZE = 64;  // 32, 64 or 128
layout(constant_id = 2) const uint SCALE_TYPE = 1;   // 0 f32, 1 f16, 2 bf16

layout(std430, binding = 0) readonly buffer Codes { uint codes[]; };
layout(std430, binding = 1) readonly buffer Scales { uint scales[]; };
layout(std430, binding = 2) readonly buffer Biases { uint biases[]; };
layout(std430, binding = 3) readonly buffer Input { float x[]; };
layout(std430, binding = 4) writeonly buffer Output { float y[]; };

layout(push_constant) uniform Push {
  uint rows;
  uint cols;
  uint code_base;   // words before row 0 of this dispatch
  uint scale_base;  // scale (and bias) elements before row 0 of this dispatch
  uint bias_base;
  uint x_base;
  uint y_base;
  uint y_stride;
} p;

#include "workgroup_sum.glsl"

const uint CODES_PER_WORD = 32u / BITS;
const uint MASK = (1u << BITS) - 1u;

float scale_at(uint i) { return widen_scalar(scales[scalar_word(i, SCALE_TYPE)], i, SCALE_TYPE); }
float bias_at(uint i) { return widen_scalar(biases[scalar_word(i, SCALE_TYPE)], i, SCALE_TYPE); }

void main() {
  const uint row = gl_WorkGroupID.x;
  const uint token = gl_WorkGroupID.y;
  const uint lane = gl_LocalInvocationID.x;
  const uint words_per_row = p.cols / CODES_PER_WORD;
  const uint groups_per_row = p.cols / GROUP_SIZE;
  const uint code_row = p.code_base + row * words_per_row;
  const uint x_row = p.x_base + token * p.cols;
  float acc = 0.0;
  for (uint word = lane; word < words_per_row; word += 64u) {
    const uint packed = codes[code_row + word];
    const uint k0 = word * CODES_PER_WORD;
    // A word never straddles two groups: GROUP_SIZE is a multiple of CODES_PER_WORD.
    const uint g = row * groups_per_row + k0 / GROUP_SIZE;
    const float scale = scale_at(p.scale_base + g);
    const float bias = bias_at(p.bias_base + g);
    for (uint c = 0u; c < CODES_PER_WORD; ++c) {
      const float q = float((packed >> (c * BITS)) & MASK);
      acc = FMA(FMA(scale, q, bias), x[x_row + k0 + c], acc);
    }
  }
  const float sum = workgroup_sum(acc);
  if (lane == 0u) y[p.y_base + token * p.y_stride + row] = sum;
}
