// The body of matmul_float.comp and matmul_float_exact_fma.comp (fma.glsl says why two):
// y[t][o] = sum_k W[o][k] * x[t][k], each output computed by matmul_float_dot.glsl.
#include "matmul_float_dot.glsl"

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

void main() {
  const uint row = gl_WorkGroupID.x * ROWS_PER_GROUP + dot_slot();
  const uint token = gl_WorkGroupID.y;
  const bool in_range = row < p.rows;
  const float s = float_row_dot(p.w_base + row * p.cols, p.x_base + token * p.cols, p.cols, in_range);
  if (in_range && dot_lane() == 0u) y[p.y_base + token * p.y_stride + row] = s;
}
