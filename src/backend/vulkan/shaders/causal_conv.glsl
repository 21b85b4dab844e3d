// The body of causal_conv.comp and causal_conv_exact_fma.comp (fma.glsl says why two).
// kernels/causal_conv.h's causal_conv1d_silu: one invocation per channel c runs through the
// T rows in order,
//   out[t][c] = silu(sum_j w[j][c] * in(t - (K-1) + j)[c]),  in(s < 0) = state row K-1+s,
// the sum one fma chain from 0 over the taps (as GCC compiles the CPU's `o += w * in`), silu
// as silu_in_place applies it to a row of C (avx_silu over the full 8-float blocks, the
// scalar silu after), then leaves the last K-1 input rows as the state. A channel's state is
// read and written by its own invocation only. With KEEP_HISTORY (a verify call of speculative
// decoding) it also writes the state as it stands after each row t, the K-1 input rows up to
// t, to that row's copy of the state.
#include "fma.glsl"
#include "avx_exp.glsl"

layout(local_size_x = 64) in;

const uint MAX_TAPS = 8u;

layout(std430, binding = 0) readonly buffer Input { float x[]; };
layout(std430, binding = 1) readonly buffer Taps { float w[]; };  // [K][C]
layout(std430, binding = 2) buffer State { float state[]; };      // [K-1][C]
layout(std430, binding = 3) writeonly buffer Output { float y[]; };  // [T][C]
layout(std430, binding = 4) writeonly buffer History { float history[]; };  // [T][K-1][C]

layout(constant_id = 0) const bool KEEP_HISTORY = false;

layout(push_constant) uniform Push {
  uint rows;      // T
  uint channels;  // C
  uint taps;      // K, at most MAX_TAPS
  uint x_stride;  // floats from one input row to the next
} p;

float input_value(int s, uint c) {
  return s >= 0 ? x[uint(s) * p.x_stride + c] : state[uint(int(p.taps) - 1 + s) * p.channels + c];
}

void main() {
  const uint c = gl_GlobalInvocationID.x;
  if (c >= p.channels) return;
  const bool vector_lane = c < (p.channels & ~7u);
  const int K = int(p.taps), T = int(p.rows);
  for (int t = 0; t < T; ++t) {
    precise float acc = 0.0;
    for (int j = 0; j < K; ++j) acc = FMA(w[uint(j) * p.channels + c], input_value(t - (K - 1) + j, c), acc);
    y[uint(t) * p.channels + c] = vector_lane ? avx_silu(acc) : scalar_silu(acc);
    if (KEEP_HISTORY)
      for (int r = 0; r < K - 1; ++r)
        history[(uint(t) * uint(K - 1) + uint(r)) * p.channels + c] =
            input_value(t + 1 - (K - 1) + r, c);
  }
  float next[MAX_TAPS];
  for (int r = 0; r < K - 1; ++r) next[r] = input_value(T - (K - 1) + r, c);
  for (int r = 0; r < K - 1; ++r) state[uint(r) * p.channels + c] = next[r];
}
