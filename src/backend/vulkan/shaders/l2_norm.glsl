// The body of l2_norm.comp and l2_norm_exact_fma.comp (fma.glsl says why two).
// kernels/norms.h's l2_norm_scaled on each head of each row, in place:
//   x = x * (scale / sqrt(sum(x^2) + eps)),
// the sum in vec::sum_squares' order (sum_squares.glsl), so bit-identical to the CPU on a
// device with correctly rounded fma, division and square root (lavapipe) for head sizes that
// are a multiple of 8. One workgroup per (head, row).
#include "fma.glsl"

layout(local_size_x = 16) in;

layout(std430, binding = 0) buffer Rows { float x[]; };

layout(push_constant) uniform Push {
  uint n;           // floats per head
  uint row_stride;  // floats from one row to the next
  uint x_base;      // floats before row 0's first head
  float eps;
  float scale;
} p;

#include "sum_squares.glsl"

void main() {
  const uint head = p.x_base + gl_WorkGroupID.y * p.row_stride + gl_WorkGroupID.x * p.n;
  const float s = row_sum_squares(head, p.n);
  precise float factor = p.scale / sqrt(s + p.eps);
  for (uint i = gl_LocalInvocationID.x; i < p.n; i += 16u) {
    precise float y = x[head + i] * factor;
    x[head + i] = y;
  }
}
