// The body of matmul_float.comp and matmul_float_exact_fma.comp (fma.glsl says why two).
// y[t][o] = sum_k W[o][k] * x[t][k] for f32, f16 or bf16 weights (WEIGHT_TYPE), in exactly the
// order the CPU computes a generated (decode) row (vec::dot for f32: two 8-wide fma
// accumulators over blocks of 16 columns, one more 8-wide step, the horizontal sum, a scalar
// tail; vec::dot_typed for 16-bit weights: one 8-wide accumulator over blocks of 8). So an
// output is bit-identical to the CPU's wherever FMA is correctly rounded (fma.glsl), and the
// same for a token alone or in a batch on any device. LANES invocations compute one output,
// one per CPU vector lane; a workgroup of 64 computes 64 / LANES outputs of one token.
//
// 16-bit weights are read as uint32 words and widened by hand (scalar_load.glsl).
#include "fma.glsl"
#include "scalar_load.glsl"

layout(local_size_x = 64) in;

layout(constant_id = 0) const uint WEIGHT_TYPE = 0;  // 0 f32, 1 f16, 2 bf16

const uint LANES = WEIGHT_TYPE == 0u ? 16u : 8u;
const uint ROWS_PER_GROUP = 64u / LANES;

layout(std430, binding = 0) readonly buffer Weights { uint w[]; };
layout(std430, binding = 1) readonly buffer Input { float x[]; };
layout(std430, binding = 2) writeonly buffer Output { float y[]; };

// Offsets are in elements from the start of each binding (bindings start at aligned offsets).
layout(push_constant) uniform Push {
  uint rows;      // outputs in this dispatch
  uint cols;
  uint w_base;    // weight elements before row 0 of this dispatch
  uint x_base;    // floats before token 0's input
  uint y_base;    // floats before token 0's output for row 0
  uint y_stride;  // floats from one token's outputs to the next
} p;

#include "avx_sum_order.glsl"

shared float lane_sums[64];

float weight(uint i) { return widen_scalar(w[scalar_word(i, WEIGHT_TYPE)], i, WEIGHT_TYPE); }

void main() {
  const uint lane = gl_LocalInvocationID.x % LANES;
  const uint slot = gl_LocalInvocationID.x / LANES;
  const uint row = gl_WorkGroupID.x * ROWS_PER_GROUP + slot;
  const uint token = gl_WorkGroupID.y;
  const bool in_range = row < p.rows;
  const uint w_row = p.w_base + row * p.cols;
  const uint x_row = p.x_base + token * p.cols;
  const uint blocks = p.cols & ~(LANES - 1u);
  // f32 only: the 8-wide step after the 16-wide blocks (lanes 0-7, the first accumulator).
  const bool step8 = LANES == 16u && p.cols - blocks >= 8u;
  precise float acc = 0.0;
  if (in_range) {
    for (uint i = lane; i < blocks; i += LANES) acc = FMA(x[x_row + i], weight(w_row + i), acc);
    if (step8 && lane < 8u) acc = FMA(x[x_row + blocks + lane], weight(w_row + blocks + lane), acc);
  }
  lane_sums[gl_LocalInvocationID.x] = acc;
  barrier();
  if (!in_range || lane != 0u) return;
  const uint first = slot * LANES;
  precise float v[8];
  for (uint j = 0u; j < 8u; ++j) {
    v[j] = lane_sums[first + j];
    if (LANES == 16u) v[j] = v[j] + lane_sums[first + j + 8u];
  }
  precise float s = avx_hsum(v);
  for (uint i = blocks + (step8 ? 8u : 0u); i < p.cols; ++i)
    s = FMA(x[x_row + i], weight(w_row + i), s);
  y[p.y_base + token * p.y_stride + row] = s;
}
