// The body of layer_norm.comp and layer_norm_exact_fma.comp (fma.glsl says why two).
// LayerNorm of each row with weight and bias, in kernels/norms.cpp's layer_norm order:
//   mean = vec::sum(x) / n   (8 AVX lanes of adds, the AVX horizontal sum, the scalar tail)
//   s    = sum of (x - mean)^2 in one serial chain, as GCC compiles the CPU's `sum_sq += d * d`:
//          the squares of the first n & ~3 elements rounded, then added in order (its vector
//          loop), the last n % 4 fused into the sum (its scalar tail)
//   inv  = 1 / sqrt(s / n + eps)
//   y    = fma((x - mean) * inv, w, b)
// so on a device with correctly rounded fma, division and square root (lavapipe) it is
// bit-identical to the CPU kernel as the optimised build compiles it (-O2; the sanitizer
// build's -O1 orders the loop otherwise, and agrees within rounding). `precise` keeps the
// compiler from fusing or reordering the rest.
#include "fma.glsl"
#include "avx_sum_order.glsl"

layout(local_size_x = 16) in;

layout(std430, binding = 0) readonly buffer Input { float x[]; };
layout(std430, binding = 1) readonly buffer Weight { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float b[]; };
layout(std430, binding = 3) writeonly buffer Output { float y[]; };

layout(push_constant) uniform Push {
  uint n;       // columns
  float eps;
  uint x_base;  // floats before row 0 of this dispatch
  uint y_base;
} p;

shared float lane_sums[8];
shared float row_mean;
shared float row_inv;

void main() {
  const uint lane = gl_LocalInvocationID.x;
  const uint x_row = p.x_base + gl_WorkGroupID.x * p.n;
  const uint y_row = p.y_base + gl_WorkGroupID.x * p.n;
  const uint blocks8 = p.n & ~7u;
  if (lane < 8u) {
    precise float acc = 0.0;
    for (uint i = 0u; i < blocks8; i += 8u) acc = acc + x[x_row + i + lane];
    lane_sums[lane] = acc;
  }
  barrier();
  if (lane == 0u) {
    precise float v[8];
    for (uint j = 0u; j < 8u; ++j) v[j] = lane_sums[j];
    precise float s = avx_hsum(v);
    for (uint i = blocks8; i < p.n; ++i) s = s + x[x_row + i];
    precise float mean = s / float(p.n);
    precise float sq = 0.0;
    const uint blocks4 = p.n & ~3u;
    for (uint i = 0u; i < blocks4; ++i) {
      precise float d = x[x_row + i] - mean;
      precise float d2 = d * d;
      sq = sq + d2;
    }
    for (uint i = blocks4; i < p.n; ++i) {
      precise float d = x[x_row + i] - mean;
      sq = FMA(d, d, sq);
    }
    precise float var = sq / float(p.n) + p.eps;
    precise float inv = 1.0 / sqrt(var);
    row_mean = mean;
    row_inv = inv;
  }
  barrier();
  const float mean = row_mean, inv = row_inv;
  for (uint i = lane; i < p.n; i += 16u) {
    precise float scaled = (x[x_row + i] - mean) * inv;
    y[y_row + i] = FMA(scaled, w[i], b[i]);
  }
}
