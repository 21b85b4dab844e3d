// The body of matmul_by_expert_gguf.comp and its _exact_fma twin (fma.glsl says why two):
// matmul_by_expert_affine.glsl's routed matmul over the experts' GGUF blocks stacked back to
// back and read in place, each output matmul_gguf_dot.glsl's (bit-identical to the plain matmul
// of the route's expert). A route whose expert this dispatch does not bind leaves, its
// workgroup whole.
#include "matmul_gguf_dot.glsl"

layout(std430, binding = 2) writeonly buffer Output { float y[]; };
layout(std430, binding = 3) readonly buffer Ids { int ids[]; };

layout(push_constant) uniform Push {
  uint rows;  // rows of one expert's matrix (and outputs per route)
  uint cols;
  uint byte_base;    // bytes before expert expert_first's row 0
  uint row_bytes;
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
  const uint row = expert * p.rows + gl_WorkGroupID.x;
  const float sum = quantized_row_dot(uvec3(p.byte_base + row * p.row_bytes, 0u, 0u),
                                      p.x_base + (route / p.x_routes) * p.cols, p.cols);
  if (gl_LocalInvocationID.x == 0u) y[p.y_base + route * p.rows + gl_WorkGroupID.x] = sum;
}
