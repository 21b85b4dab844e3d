#version 450
#extension GL_GOOGLE_include_directive : require
// The Gated DeltaNet gates (delta_gates.h), in place: b[i] <- sigmoid(b[i]) and
// a[i] <- A[h] * softplus(a[i] + dt_bias[h]) with h = i % heads, in delta_net_layer.cpp's
// order of operations. No fma anywhere, so there is no _exact_fma variant.
#include "fma.glsl"
#include "avx_exp.glsl"

layout(local_size_x = 64) in;

layout(std430, binding = 0) buffer Beta { float b[]; };
layout(std430, binding = 1) buffer Decay { float a[]; };
layout(std430, binding = 2) readonly buffer A { float A_neg_exp[]; };
layout(std430, binding = 3) readonly buffer DtBias { float dt_bias[]; };

layout(push_constant) uniform Push {
  uint count;  // elements (rows x heads) in this dispatch
  uint heads;
  uint b_base;  // floats before element 0 in each binding
  uint a_base;
  uint A_base;
  uint dt_base;
} p;

// log(1 + x) for x >= 0 to log's relative accuracy (Goldberg, "What every computer scientist
// should know about floating-point arithmetic", 1991, theorem 4): u - 1 is exact, and the
// ratio x / (u - 1) corrects log(u) for the rounding of 1 + x.
float log1p_accurate(float x) {
  precise float u = 1.0 + x;
  if (u == 1.0) return x;
  precise float d = u - 1.0;
  precise float r = log(u) * (x / d);
  return r;
}

// activations.h's softplus: torch's threshold of 20, above which it is x itself.
float softplus(float x) { return x > 20.0 ? x : log1p_accurate(libm_exp(x)); }

void main() {
  const uint stride = gl_NumWorkGroups.x * 64u;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    const uint h = i % p.heads;
    b[p.b_base + i] = scalar_sigmoid(b[p.b_base + i]);
    precise float x = a[p.a_base + i] + dt_bias[p.dt_base + h];
    precise float g = A_neg_exp[p.A_base + h] * softplus(x);
    a[p.a_base + i] = g;
  }
}
