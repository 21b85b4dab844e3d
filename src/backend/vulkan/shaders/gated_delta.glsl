// The body of gated_delta.comp and gated_delta_exact_fma.comp (fma.glsl says why two).
// kernels/gated_delta.h's recurrence, one invocation per state row j of value head h (state
// [Hv][Dv][Dk]), through the T tokens in order, in the CPU's rewritten form (gated_delta.cpp):
//   a = exp(g_t);  dk = s_j . k_t,  dq = s_j . q_t  (8 fma lanes over Dk, simd::hsum8's order,
//   then the tail);  delta = beta_t * fma(-a, dk, v_t[j]);  o_t[j] = fma(delta, k.q, a * dq);
//   s_j <- fma(delta, k_t, a * s_j),
// with k.q as vec::dot computes it. Rows are independent given a token's inputs, so nothing is
// shared between invocations. exp(g_t) is std::exp on the CPU and the device's exp() here: the
// one source of difference (gated_delta.h). With KEEP_HISTORY (a verify call of speculative
// decoding) the row is also written after each token to that token's copy of the state; the
// arithmetic is the same either way.
#include "fma.glsl"
#include "avx_exp.glsl"
#include "avx_sum_order.glsl"

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Inputs { float qkv[]; };
layout(std430, binding = 1) readonly buffer Decay { float g[]; };     // [T][Hv]
layout(std430, binding = 2) readonly buffer Beta { float beta[]; };   // [T][Hv]
layout(std430, binding = 3) buffer State { float s[]; };              // [Hv][Dv][Dk]
layout(std430, binding = 4) writeonly buffer Output { float o[]; };   // [T][Hv][Dv]
layout(std430, binding = 5) writeonly buffer History { float history[]; };  // [T][Hv][Dv][Dk]

layout(constant_id = 0) const bool KEEP_HISTORY = false;

layout(push_constant) uniform Push {
  uint tokens, key_heads, value_heads, key_dim, value_dim;
  uint row_stride;  // floats from one token's inputs to the next
  uint q_offset, k_offset, v_offset;  // floats before token 0's q, k and v heads
} p;

// simd::hsum8's order for one lane: adjacent pairs, then pairs of pairs, then the halves.
float hsum8_lane(float v[8]) {
  precise float sum = ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
  return sum;
}

// vec::dot(k, q): two 8-wide accumulators over blocks of 16, one more 8-step, their lane sums,
// the AVX horizontal sum, the scalar tail.
float key_query_dot(uint k, uint q, uint n) {
  precise float a0[8], a1[8];
  for (uint l = 0u; l < 8u; ++l) {
    a0[l] = 0.0;
    a1[l] = 0.0;
  }
  uint i = 0u;
  for (; i + 16u <= n; i += 16u)
    for (uint l = 0u; l < 8u; ++l) {
      a0[l] = FMA(qkv[k + i + l], qkv[q + i + l], a0[l]);
      a1[l] = FMA(qkv[k + i + 8u + l], qkv[q + i + 8u + l], a1[l]);
    }
  if (i + 8u <= n) {
    for (uint l = 0u; l < 8u; ++l) a0[l] = FMA(qkv[k + i + l], qkv[q + i + l], a0[l]);
    i += 8u;
  }
  precise float v[8];
  for (uint l = 0u; l < 8u; ++l) v[l] = a0[l] + a1[l];
  precise float sum = avx_hsum(v);
  for (; i < n; ++i) sum = FMA(qkv[k + i], qkv[q + i], sum);
  return sum;
}

void main() {
  const uint id = gl_GlobalInvocationID.x;
  if (id >= p.value_heads * p.value_dim) return;
  const uint h = id / p.value_dim, j = id % p.value_dim;
  const uint Dk = p.key_dim, D8 = Dk & ~7u;
  const uint key_head = h / (p.value_heads / p.key_heads);
  const uint row = id * Dk;
  for (uint t = 0u; t < p.tokens; ++t) {
    const uint base = t * p.row_stride;
    const uint q = base + p.q_offset + key_head * Dk, k = base + p.k_offset + key_head * Dk;
    const float v = qkv[base + p.v_offset + h * p.value_dim + j];
    const float alpha = libm_exp(g[t * p.value_heads + h]);
    const float b = beta[t * p.value_heads + h];
    precise float to_k[8], to_q[8];
    for (uint l = 0u; l < 8u; ++l) {
      to_k[l] = 0.0;
      to_q[l] = 0.0;
    }
    for (uint d = 0u; d < D8; d += 8u)
      for (uint l = 0u; l < 8u; ++l) {
        to_k[l] = FMA(s[row + d + l], qkv[k + d + l], to_k[l]);
        to_q[l] = FMA(s[row + d + l], qkv[q + d + l], to_q[l]);
      }
    precise float dk = hsum8_lane(to_k), dq = hsum8_lane(to_q);
    for (uint d = D8; d < Dk; ++d) {
      dk = FMA(s[row + d], qkv[k + d], dk);
      dq = FMA(s[row + d], qkv[q + d], dq);
    }
    precise float delta = b * FMA(-alpha, dk, v);
    precise float alpha_dq = alpha * dq;
    o[(t * p.value_heads + h) * p.value_dim + j] = FMA(delta, key_query_dot(k, q, Dk), alpha_dq);
    for (uint d = 0u; d < Dk; ++d) {
      precise float decayed = alpha * s[row + d];
      s[row + d] = FMA(delta, qkv[k + d], decayed);
    }
    if (KEEP_HISTORY) {
      const uint after = t * p.value_heads * p.value_dim * Dk + row;
      for (uint d = 0u; d < Dk; ++d) history[after + d] = s[row + d];
    }
  }
}
