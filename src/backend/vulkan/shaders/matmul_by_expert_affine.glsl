// The body of matmul_by_expert_affine.comp and its _exact_fma twin (fma.glsl says why two).
// matmul_by_expert_float.glsl's routed matmul for MLX affine weights: the experts' codes,
// scales and biases each stacked back to back, one workgroup per output of one route, each
// output matmul_affine_dot.glsl's (bit-identical to the plain matmul of the route's expert).
// A route whose expert this dispatch does not bind leaves, its workgroup whole.
#include "matmul_affine_dot.glsl"

layout(std430, binding = 4) writeonly buffer Output { float y[]; };
layout(std430, binding = 5) readonly buffer Ids { int ids[]; };

layout(push_constant) uniform Push {
  uint rows;  // rows of one expert's matrix (and outputs per route)
  uint cols;
  uint code_base;     // words before expert expert_first's row 0
  uint code_stride;   // words of one expert's matrix
  uint scale_base;    // scale elements before expert expert_first's row 0
  uint bias_base;
  uint scale_stride;  // scale (and bias) elements of one expert's matrix
  uint expert_first;
  uint expert_count;
  uint id_base;   // ints before route 0's expert id
  uint x_base;    // floats before route 0's input row
  uint x_routes;  // consecutive routes that read one input row
  uint y_base;    // floats before route 0's outputs
} p;

void main() {
  const uint route = gl_WorkGroupID.y;
  const int id = ids[p.id_base + route];
  if (id < int(p.expert_first) || id >= int(p.expert_first + p.expert_count)) return;
  const uint expert = uint(id) - p.expert_first;
  const uint row = gl_WorkGroupID.x;
  const uint groups_per_row = p.cols / GROUP_SIZE;
  const uint meta_row = expert * p.scale_stride + row * groups_per_row;
  const float sum = affine_row_dot(
      p.code_base + expert * p.code_stride + row * affine_row_words(p.cols),
      p.scale_base + meta_row, p.bias_base + meta_row, p.x_base + (route / p.x_routes) * p.cols,
      p.cols);
  if (gl_LocalInvocationID.x == 0u) y[p.y_base + route * p.rows + row] = sum;
}
