// The body of rms_norm_gated.comp and rms_norm_gated_exact_fma.comp (fma.glsl says why two).
// kernels/norms.h's rms_norm_gated on each row (a Gated DeltaNet head): 
//   y = w * (x * (1 / sqrt(mean(x^2) + eps))) * silu(z),
// the sum in vec::sum_squares' order (sum_squares.glsl). silu is the CPU's scalar one, whose
// std::exp the device's exp() stands in for: the one source of difference (rms_norm_gated.h).
#include "fma.glsl"
#include "avx_exp.glsl"

layout(local_size_x = 16) in;

layout(std430, binding = 0) readonly buffer Input { float x[]; };
layout(std430, binding = 1) readonly buffer Gate { float z[]; };
layout(std430, binding = 2) readonly buffer Weight { float w[]; };
layout(std430, binding = 3) writeonly buffer Output { float y[]; };

layout(push_constant) uniform Push {
  uint n;
  float eps;
  uint x_base;  // floats before row 0 of this dispatch, in x, z and y alike
} p;

#include "sum_squares.glsl"

void main() {
  const uint row = p.x_base + gl_WorkGroupID.x * p.n;
  const float s = row_sum_squares(row, p.n);
  precise float mean = s / float(p.n) + p.eps;
  precise float inv = 1.0 / sqrt(mean);
  for (uint i = gl_LocalInvocationID.x; i < p.n; i += 16u) {
    precise float normed = x[row + i] * inv;
    precise float out_value = w[i] * normed * scalar_silu(z[row + i]);
    y[row + i] = out_value;
  }
}
