// The body of rms_norm.comp and rms_norm_exact_fma.comp (fma.glsl says why two).
// RMSNorm of each row: y = x * (1 / sqrt(mean(x^2) + eps)) * w, with w + 1 in place of w for
// zero-centred weights (WEIGHT_PLUS_ONE; the CPU folds the + 1 into the weight at load, which
// is the same float addition). Bit-identical to kernels/norms.cpp on a device with correctly
// rounded division and square root (lavapipe; FMA is made exact by fma.glsl): the sum of
// squares follows the CPU's order exactly (sum_squares.glsl). `precise` keeps the compiler
// from fusing or reordering any of it.
#include "fma.glsl"

layout(local_size_x = 16) in;

layout(constant_id = 0) const bool WEIGHT_PLUS_ONE = false;

layout(std430, binding = 0) readonly buffer Input { float x[]; };
layout(std430, binding = 1) readonly buffer Weight { float w[]; };
layout(std430, binding = 2) writeonly buffer Output { float y[]; };

layout(push_constant) uniform Push {
  uint n;       // columns
  float eps;
  uint x_base;  // floats before row 0 of this dispatch
  uint y_base;
} p;

#include "sum_squares.glsl"

void main() {
  const uint lane = gl_LocalInvocationID.x;
  const uint x_row = p.x_base + gl_WorkGroupID.x * p.n;
  const uint y_row = p.y_base + gl_WorkGroupID.x * p.n;
  const float s = row_sum_squares(x_row, p.n);
  precise float mean = s / float(p.n) + p.eps;
  precise float inv = 1.0 / sqrt(mean);
  for (uint i = lane; i < p.n; i += 16u) {
    precise float weight = WEIGHT_PLUS_ONE ? 1.0 + w[i] : w[i];
    precise float out_value = x[x_row + i] * inv * weight;
    y[y_row + i] = out_value;
  }
}
