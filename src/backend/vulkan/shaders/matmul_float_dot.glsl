// The arithmetic of one matmul_float output, shared by matmul_float.glsl (rows of one matrix)
// and matmul_by_expert_float.glsl (rows of the matrix a router picked), so an expert's row is
// bit-identical to the plain matmul of that expert's matrix.
//
// sum_k W[row][k] * x[k] for f32, f16 or bf16 weights (WEIGHT_TYPE), in exactly the order the
// CPU computes a generated (decode) row (vec::dot for f32: two 8-wide fma accumulators over
// blocks of 16 columns, one more 8-wide step, the horizontal sum, a scalar tail;
// vec::dot_typed for 16-bit weights: one 8-wide accumulator over blocks of 8). So an output is
// bit-identical to the CPU's wherever FMA is correctly rounded (fma.glsl), and the same for a
// token alone or in a batch on any device. LANES invocations compute one output, one per CPU
// vector lane; a workgroup of 64 computes 64 / LANES outputs (its slots) of one token.
//
// 16-bit weights are read as uint32 words and widened by hand (scalar_load.glsl). The
// including shader declares binding 2 (its output) and its push constants.
#include "fma.glsl"
#include "scalar_load.glsl"
#include "avx_sum_order.glsl"

layout(local_size_x = 64) in;

layout(constant_id = 0) const uint WEIGHT_TYPE = 0;  // 0 f32, 1 f16, 2 bf16

const uint LANES = WEIGHT_TYPE == 0u ? 16u : 8u;
const uint ROWS_PER_GROUP = 64u / LANES;

layout(std430, binding = 0) readonly buffer Weights { uint w[]; };
layout(std430, binding = 1) readonly buffer Input { float x[]; };

shared float lane_sums[64];

float weight(uint i) { return widen_scalar(w[scalar_word(i, WEIGHT_TYPE)], i, WEIGHT_TYPE); }

// This invocation's lane of its slot's output and the slot (the output's index in the group).
uint dot_lane() { return gl_LocalInvocationID.x % LANES; }
uint dot_slot() { return gl_LocalInvocationID.x / LANES; }

// The dot product of the weights from element w_row and the inputs from element x_row, `cols`
// long. Every invocation of the workgroup calls it (it meets at a barrier); in_range false
// for a slot past the last row. The result is meaningful in lane 0 of an in-range slot only.
float float_row_dot(uint w_row, uint x_row, uint cols, bool in_range) {
  const uint lane = dot_lane();
  const uint blocks = cols & ~(LANES - 1u);
  // f32 only: the 8-wide step after the 16-wide blocks (lanes 0-7, the first accumulator).
  const bool step8 = LANES == 16u && cols - blocks >= 8u;
  precise float acc = 0.0;
  if (in_range) {
    for (uint i = lane; i < blocks; i += LANES) acc = FMA(x[x_row + i], weight(w_row + i), acc);
    if (step8 && lane < 8u) acc = FMA(x[x_row + blocks + lane], weight(w_row + blocks + lane), acc);
  }
  lane_sums[gl_LocalInvocationID.x] = acc;
  barrier();
  if (!in_range || lane != 0u) return 0.0;
  const uint first = dot_slot() * LANES;
  precise float v[8];
  for (uint j = 0u; j < 8u; ++j) {
    v[j] = lane_sums[first + j];
    if (LANES == 16u) v[j] = v[j] + lane_sums[first + j + 8u];
  }
  precise float s = avx_hsum(v);
  for (uint i = blocks + (step8 ? 8u : 0u); i < cols; ++i)
    s = FMA(x[x_row + i], weight(w_row + i), s);
  return s;
}
