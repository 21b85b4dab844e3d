// The body of elementwise.comp and elementwise_exact_fma.comp (fma.glsl says why two).
// a[i] = op(a[i], b[i]) over `count` floats, in the CPU's arithmetic (elementwise.h):
//   OP 0, silu_mul:    silu(a) * b, as activations.cpp's silu_mul: avx_silu over the full
//                      8-float blocks of the whole array (the first vector_count elements),
//                      the scalar silu after them;
//   OP 1, sigmoid_mul: a * sigmoid(b), the attention output gate (scalar sigmoid);
//   OP 2, add:         a + b, the residual (vec::axpy with 1, which rounds once like a + b).
#include "fma.glsl"
#include "avx_exp.glsl"

layout(local_size_x = 64) in;

layout(constant_id = 0) const uint OP = 0;

layout(std430, binding = 0) buffer Target { float a[]; };
layout(std430, binding = 1) readonly buffer Operand { float b[]; };

layout(push_constant) uniform Push {
  uint count;         // elements in this dispatch
  uint vector_count;  // of them, those in the CPU's full 8-float blocks (a prefix)
  uint a_base;        // floats before element 0 in each binding
  uint b_base;
} p;

void main() {
  const uint stride = gl_NumWorkGroups.x * 64u;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    const float x = a[p.a_base + i], y = b[p.b_base + i];
    precise float r;
    if (OP == 0u) {
      r = (i < p.vector_count ? avx_silu(x) : scalar_silu(x)) * y;
    } else if (OP == 1u) {
      r = x * scalar_sigmoid(y);
    } else {
      r = x + y;
    }
    a[p.a_base + i] = r;
  }
}
