// The arithmetic of one quantized matmul output, whatever holds the codes: MLX affine rows
// (matmul_affine_dot.glsl) or GGUF blocks read in place (matmul_gguf_dot.glsl), so a GGUF row is
// bit-identical to the affine row kernels/gguf_affine.h rewrites it to, and an expert's row to
// the plain matmul of that expert's matrix.
//
// sum_k W[row][k] * x[k] with W[row][k] = scale[g] * q + bias[g], g = k / GROUP_SIZE, computed
// as one fma exactly as the CPU dequantizes. One workgroup computes one output: its 64
// invocations take one step of LANE_CODES columns each in turn (16, 8 or 4 codes for 2, 4 and 8
// bits, a word of affine codes; 32 codes for 3, 5 and 6 bits), accumulate with fma in column
// order and meet in a fixed tree, so results do not depend on the batch.
//
// The including shader declares local_size_x = 64, the constants BITS and GROUP_SIZE, the
// input `x[]`, and, before including this file:
//   uint row_code(uvec3 row, uint k): code k of the row `row` names;
//   void row_group(uvec3 row, uint g, out float scale, out float bias): its group g.
#include "fma.glsl"
#include "workgroup_sum.glsl"

// Columns one invocation takes per step, and how many of them share a scale (a step never
// straddles a group boundary mid-way: groups are multiples of SUB).
const uint LANE_CODES = (32u % BITS) == 0u ? 32u / BITS : 32u;
const uint SUB = LANE_CODES < GROUP_SIZE ? LANE_CODES : GROUP_SIZE;

// The dot product of row `row` with the inputs from element x_row, `cols` long. Every
// invocation of the workgroup calls it and gets the result.
float quantized_row_dot(uvec3 row, uint x_row, uint cols) {
  const uint lane = gl_LocalInvocationID.x;
  const uint steps = cols / LANE_CODES;
  float acc = 0.0;
  for (uint step = lane; step < steps; step += 64u) {
    const uint k0 = step * LANE_CODES;
    for (uint h = 0u; h < LANE_CODES; h += SUB) {
      float scale, bias;
      row_group(row, (k0 + h) / GROUP_SIZE, scale, bias);
      for (uint c = h; c < h + SUB; ++c) {
        const float q = float(row_code(row, k0 + c));
        acc = FMA(FMA(scale, q, bias), x[x_row + k0 + c], acc);
      }
    }
  }
  return workgroup_sum(acc);
}
