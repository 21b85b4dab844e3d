// The body of matmul_gguf.comp and matmul_gguf_exact_fma.comp (fma.glsl says why two): the
// matmul of matmul_affine.glsl over GGUF blocks read in place, one workgroup per output of one
// token, each computed by matmul_gguf_dot.glsl.
#include "matmul_gguf_dot.glsl"

layout(std430, binding = 2) writeonly buffer Output { float y[]; };

layout(push_constant) uniform Push {
  uint rows;
  uint cols;
  uint byte_base;  // bytes before row 0 of this dispatch
  uint row_bytes;
  uint x_base;
  uint y_base;
  uint y_stride;
} p;

void main() {
  const uint row = gl_WorkGroupID.x;
  const uint token = gl_WorkGroupID.y;
  const float sum = quantized_row_dot(uvec3(p.byte_base + row * p.row_bytes, 0u, 0u),
                                      p.x_base + token * p.cols, p.cols);
  if (gl_LocalInvocationID.x == 0u) y[p.y_base + token * p.y_stride + row] = sum;
}
