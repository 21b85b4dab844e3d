// The body of matmul_by_expert_float.comp and its _exact_fma twin (fma.glsl says why two).
// For every route r (a token's j-th expert, r = t * k + j): y[r][o] = sum_k W_e[o][k] * x[i][k]
// with e = ids[r], W_e the e-th of the experts' f32/f16/bf16 matrices stacked back to back,
// and i = r / x_routes (x_routes = k: the token's row, for gate and up; 1: the route's own
// row, for down). Each output is matmul_float_dot.glsl's, so it is bit-identical to the
// plain matmul of W_e (matmul_float.glsl) and never depends on the batch or the other routes.
//
// A dispatch binds the matrices of experts [expert_first, expert_first + expert_count) only
// (a window of the stacked buffer, binding_window.h): a route whose expert lies outside
// leaves. All of a workgroup serves one route, so it leaves whole, before any barrier.
#include "matmul_float_dot.glsl"

layout(std430, binding = 2) writeonly buffer Output { float y[]; };
layout(std430, binding = 3) readonly buffer Ids { int ids[]; };

layout(push_constant) uniform Push {
  uint rows;           // rows of one expert's matrix (and outputs per route)
  uint cols;
  uint w_base;         // weight elements before expert expert_first's row 0
  uint expert_stride;  // weight elements of one expert's matrix
  uint expert_first;
  uint expert_count;
  uint id_base;        // ints before route 0's expert id
  uint x_base;         // floats before route 0's input row
  uint x_routes;       // consecutive routes that read one input row
  uint y_base;         // floats before route 0's outputs
} p;

void main() {
  const uint route = gl_WorkGroupID.y;
  const int id = ids[p.id_base + route];
  if (id < int(p.expert_first) || id >= int(p.expert_first + p.expert_count)) return;
  const uint expert = uint(id) - p.expert_first;
  const uint row = gl_WorkGroupID.x * ROWS_PER_GROUP + dot_slot();
  const bool in_range = row < p.rows;
  const float s = float_row_dot(p.w_base + expert * p.expert_stride + row * p.cols,
                                p.x_base + (route / p.x_routes) * p.cols, p.cols, in_range);
  if (in_range && dot_lane() == 0u) y[p.y_base + route * p.rows + row] = s;
}
