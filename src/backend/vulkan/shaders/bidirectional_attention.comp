#version 450
// Unmasked multi-head attention (kernels/bidirectional_attention.h): every query row of a frame
// over all T key rows of that frame. One workgroup per (query row, head): the 64 lanes score 64
// keys at a time (each lane one key, its dot product in dimension order), then the chunk joins
// the running softmax (online: the running maximum m, the sum l of e^(s - m), and the weighted
// sum of V rows, rescaled when m grows); each lane owns output dimensions lane and lane + 64
// (D <= 128) and adds the chunk's 64 weighted values in key order. Every sum has one fixed
// order (the chunk's sum a fixed tree in shared memory, no atomics), so the result's bits
// depend only on the inputs. Its order is not the CPU's (a GEMM, then softmax), so the two
// agree to rounding (bidirectional_attention_test.cpp bounds it).
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 2) readonly buffer V { float v[]; };
layout(std430, binding = 3) writeonly buffer Out { float o[]; };

layout(push_constant) uniform Push {
  uint T;            // key rows (and query rows) of the frame
  uint D;            // head dimension, at most 128
  uint q_stride, k_stride, v_stride, o_stride;  // floats between consecutive rows
  uint q_base, k_base, v_base, o_base;          // floats before row 0, head 0 of the frame
  uint first_query;  // of this dispatch
  float scale;
} p;

shared float query[128];
shared float weights[64];
shared float partials[64];

// A fixed binary tree over the 64 lanes; every lane gets the result.
float tree_sum(float value) {
  const uint lane = gl_LocalInvocationID.x;
  partials[lane] = value;
  barrier();
  for (uint stride = 32u; stride > 0u; stride >>= 1) {
    if (lane < stride) partials[lane] += partials[lane + stride];
    barrier();
  }
  const float sum = partials[0];
  barrier();
  return sum;
}

float tree_max(float value) {
  const uint lane = gl_LocalInvocationID.x;
  partials[lane] = value;
  barrier();
  for (uint stride = 32u; stride > 0u; stride >>= 1) {
    if (lane < stride) partials[lane] = max(partials[lane], partials[lane + stride]);
    barrier();
  }
  const float m = partials[0];
  barrier();
  return m;
}

void main() {
  const uint lane = gl_LocalInvocationID.x;
  const uint t = p.first_query + gl_WorkGroupID.x, head = gl_WorkGroupID.y;
  const uint column = head * p.D;
  for (uint d = lane; d < p.D; d += 64u) query[d] = q[p.q_base + t * p.q_stride + column + d];
  barrier();
  const uint d0 = lane, d1 = lane + 64u;
  precise float acc0 = 0.0, acc1 = 0.0;
  precise float m = -3.402823466e38, l = 0.0;
  for (uint j0 = 0u; j0 < p.T; j0 += 64u) {
    const uint j = j0 + lane;
    const bool real = j < p.T;
    precise float s = 0.0;
    if (real) {
      const uint row = p.k_base + j * p.k_stride + column;
      for (uint d = 0u; d < p.D; ++d) s += query[d] * k[row + d];
      s *= p.scale;
    }
    const float chunk_max = tree_max(real ? s : -3.402823466e38);
    precise float m_new = max(m, chunk_max);
    precise float w = real ? exp(s - m_new) : 0.0;
    weights[lane] = w;
    const float chunk_sum = tree_sum(w);  // its barriers publish weights[] too
    precise float rescale = exp(m - m_new);
    l = l * rescale + chunk_sum;
    m = m_new;
    const uint keys = min(64u, p.T - j0);
    precise float sum0 = 0.0, sum1 = 0.0;
    for (uint i = 0u; i < keys; ++i) {
      const uint row = p.v_base + (j0 + i) * p.v_stride + column;
      if (d0 < p.D) sum0 += weights[i] * v[row + d0];
      if (d1 < p.D) sum1 += weights[i] * v[row + d1];
    }
    acc0 = acc0 * rescale + sum0;
    acc1 = acc1 * rescale + sum1;
    barrier();  // weights[] is rewritten by the next chunk
  }
  const uint out_row = p.o_base + t * p.o_stride + column;
  if (d0 < p.D) o[out_row + d0] = acc0 / l;
  if (d1 < p.D) o[out_row + d1] = acc1 / l;
}
