// The body of matmul_affine.comp and matmul_affine_exact_fma.comp (fma.glsl says why two):
// y[t][o] = sum_k W[o][k] * x[t][k], one workgroup per output of one token, each computed by
// matmul_affine_dot.glsl.
#include "matmul_affine_dot.glsl"

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

void main() {
  const uint row = gl_WorkGroupID.x;
  const uint token = gl_WorkGroupID.y;
  const uint groups_per_row = p.cols / GROUP_SIZE;
  const float sum =
      affine_row_dot(p.code_base + row * affine_row_words(p.cols),
                     p.scale_base + row * groups_per_row, p.bias_base + row * groups_per_row,
                     p.x_base + token * p.cols, p.cols);
  if (gl_LocalInvocationID.x == 0u) y[p.y_base + token * p.y_stride + row] = sum;
}
