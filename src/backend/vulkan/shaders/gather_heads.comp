#version 450
// out row t, head i = in row t, head order[i] (gather_heads.h): one workgroup per head of a row.
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Input { float x[]; };
layout(std430, binding = 1) readonly buffer Order { int order[]; };
layout(std430, binding = 2) writeonly buffer Output { float y[]; };

layout(push_constant) uniform Push {
  uint heads;
  uint n;  // floats per head
  uint in_base;
  uint order_base;
  uint out_base;
} p;

void main() {
  const uint i = gl_WorkGroupID.x, row = gl_WorkGroupID.y;
  const uint from = uint(order[p.order_base + i]) % p.heads;
  const uint src = p.in_base + (row * p.heads + from) * p.n;
  const uint dst = p.out_base + (row * p.heads + i) * p.n;
  for (uint d = gl_LocalInvocationID.x; d < p.n; d += 64u) y[dst + d] = x[src + d];
}
