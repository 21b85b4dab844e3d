// The body of attention.comp and attention_exact_fma.comp (fma.glsl says why two).
// Causal GQA attention of one query row (at its own position P) and one query head per
// workgroup of 64, over K/V rows [0, P] of a cache laid out as kernels/kv_row.h stores it,
// in the arithmetic kernels/attention.cpp uses for the row's kind (GENERATED):
//  - generated rows (its decode kernel): each score an 8-lane fma chain over D then the AVX
//    horizontal sum, times scale (times the K row's int8 scale); the softmax over all P + 1
//    scores with avx_exp over full 8-score blocks summed in 8 lanes, std::exp after them; the
//    probabilities times the V row's int8 scale; each output one fma chain over the rows.
//    The scores live in `scratch` between the passes.
//  - prompt rows (its block kernel): q pre-multiplied by scale; keys in blocks of 64 from
//    position 0 with an online softmax (running max and sum, rescaled by std::exp when the max
//    grows), avx_exp of a block summed in 8 lanes; int8 rows dequantized before use; the
//    output divided by the sum at the end (times 1 / sum).
// Every reduction has a fixed order (no atomics), so the result depends on nothing but the
// inputs. libm_exp (the device's exp) stands where the CPU calls std::exp: the one source of
// difference from the CPU (attention.h).
#include "fma.glsl"
#include "avx_exp.glsl"
#include "avx_sum_order.glsl"

layout(local_size_x = 64) in;

layout(constant_id = 0) const uint KV_TYPE = 0;  // kv_row.h's KvType: 0 f32, 1 f16, 2 bf16, 3 int8
layout(constant_id = 1) const bool GENERATED = false;

const uint MAX_D = 512u;
const uint BLOCK = 64u;  // keys per block of the prompt kernel (attention.cpp's kKeyBlock)

layout(std430, binding = 0) readonly buffer Queries { float q[]; };
layout(std430, binding = 1) readonly buffer Positions { int position[]; };
layout(std430, binding = 2) readonly buffer Keys { uint k_words[]; };
layout(std430, binding = 3) readonly buffer Values { uint v_words[]; };
layout(std430, binding = 4) writeonly buffer Output { float o[]; };
layout(std430, binding = 5) coherent buffer Scratch { float scratch[]; };

layout(push_constant) uniform Push {
  uint heads;          // Nh
  uint kv_heads;       // Nkv
  uint head_dim;       // D, a multiple of 16, at most MAX_D
  float scale;
  uint head_words;     // 32-bit words of one KV head row
  uint scratch_stride; // floats of scratch per (row, head): at least P + 1
} p;

shared float query[MAX_D];
shared float block_scores[BLOCK];
shared float reduced[64];
shared float softmax_max, softmax_sum, rescale;
shared bool grew;

// Element d of the K or V head row starting at word `row` (int8: the code, not yet scaled).
float kv_element(uint row, uint d, bool keys) {
  const uint word = keys ? k_words[row + (KV_TYPE == 0u ? d : KV_TYPE == 3u ? d >> 2 : d >> 1)]
                         : v_words[row + (KV_TYPE == 0u ? d : KV_TYPE == 3u ? d >> 2 : d >> 1)];
  if (KV_TYPE == 0u) return uintBitsToFloat(word);
  if (KV_TYPE == 3u) return float(bitfieldExtract(int(word), int((d & 3u) * 8u), 8));
  const uint bits = (d & 1u) != 0u ? word >> 16 : word & 0xffffu;
  if (KV_TYPE == 1u) return unpackHalf2x16(bits).x;
  return uintBitsToFloat(bits << 16);
}

// An int8 row's scale (the float after its D codes); 1 for the plain types.
float kv_row_scale(uint row, bool keys) {
  if (KV_TYPE != 3u) return 1.0;
  const uint at = row + p.head_dim / 4u;
  return uintBitsToFloat(keys ? k_words[at] : v_words[at]);
}

// An element as the prompt kernel reads it: int8 rows dequantized (code * scale, rounded).
float kv_value(uint row, uint d, bool keys) {
  precise float x = kv_element(row, d, keys);
  if (KV_TYPE == 3u) x = x * kv_row_scale(row, keys);
  return x;
}

// The maximum over the workgroup (order does not matter for a maximum).
float workgroup_max(float x) {
  const uint lane = gl_LocalInvocationID.x;
  reduced[lane] = x;
  barrier();
  for (uint stride = 32u; stride > 0u; stride >>= 1) {
    if (lane < stride) reduced[lane] = max(reduced[lane], reduced[lane + stride]);
    barrier();
  }
  const float m = reduced[0];
  barrier();
  return m;
}

void scratch_barrier() {
  memoryBarrierBuffer();
  barrier();
}

void generated_row(uint n, uint kv_row0, uint row_stride, uint s_base, uint out_base) {
  const uint lane = gl_LocalInvocationID.x;
  const uint D = p.head_dim;
  // Scores: 8 lanes of fma over D, the AVX horizontal sum, times scale * the row's scale.
  float local_max = uintBitsToFloat(0xff800000u);  // -inf
  for (uint j = lane; j < n; j += 64u) {
    const uint row = kv_row0 + j * row_stride;
    precise float acc[8];
    for (uint l = 0u; l < 8u; ++l) acc[l] = 0.0;
    for (uint d = 0u; d < D; d += 8u)
      for (uint l = 0u; l < 8u; ++l) acc[l] = FMA(query[d + l], kv_element(row, d + l, true), acc[l]);
    precise float row_scale = p.scale * kv_row_scale(row, true);
    precise float s = avx_hsum(acc) * row_scale;
    scratch[s_base + j] = s;
    local_max = max(local_max, s);
  }
  const float m = workgroup_max(local_max);
  scratch_barrier();
  // Exponentials: avx_exp over the full blocks of 8, std::exp's stand-in after them.
  const uint n8 = n & ~7u;
  for (uint j = lane; j < n; j += 64u) {
    precise float shifted = scratch[s_base + j] - m;
    scratch[s_base + j] = j < n8 ? avx_exp(shifted) : libm_exp(shifted);
  }
  scratch_barrier();
  // Their sum in the CPU's order: 8 lane sums, the horizontal sum, the tail one by one.
  if (lane < 8u) {
    precise float t = 0.0;
    for (uint j = lane; j < n8; j += 8u) t = t + scratch[s_base + j];
    reduced[lane] = t;
  }
  barrier();
  if (lane == 0u) {
    precise float v[8];
    for (uint l = 0u; l < 8u; ++l) v[l] = reduced[l];
    precise float sum = avx_hsum(v);
    for (uint j = n8; j < n; ++j) sum = sum + scratch[s_base + j];
    softmax_sum = sum;
  }
  barrier();
  precise float inv = 1.0 / softmax_sum;
  // Each output: one fma chain over the rows, weights e * (1 / sum) (* the V row's scale).
  for (uint d = lane; d < D; d += 64u) {
    precise float acc = 0.0;
    for (uint j = 0u; j < n; ++j) {
      const uint row = kv_row0 + j * row_stride;
      precise float w = scratch[s_base + j] * inv;
      if (KV_TYPE == 3u) w = w * kv_row_scale(row, false);
      acc = FMA(w, kv_element(row, d, false), acc);
    }
    o[out_base + d] = acc;
  }
}

void prompt_row(uint n, uint kv_row0, uint row_stride, uint out_base) {
  const uint lane = gl_LocalInvocationID.x;
  const uint D = p.head_dim;
  const float minus_inf = uintBitsToFloat(0xff800000u);
  precise float acc[MAX_D / 64u];
  for (uint i = 0u; i < MAX_D / 64u; ++i) acc[i] = 0.0;
  if (lane == 0u) {
    softmax_max = minus_inf;
    softmax_sum = 0.0;
  }
  barrier();
  for (uint k0 = 0u; k0 < n; k0 += BLOCK) {
    const uint visible = min(BLOCK, n - k0);
    // Scores of the block: one fma chain over D each (the register tile's order).
    float s = minus_inf;
    if (lane < visible) {
      const uint row = kv_row0 + (k0 + lane) * row_stride;
      precise float dot = 0.0;
      for (uint d = 0u; d < D; ++d) dot = FMA(kv_value(row, d, true), query[d], dot);
      s = dot;
    }
    block_scores[lane] = s;
    const float block_max = workgroup_max(s);
    if (lane == 0u) {
      const float old_max = softmax_max;
      grew = block_max > old_max;
      if (grew) {
        // exp(-inf) is 0 on the CPU: the first block starts the sums from zero.
        rescale = old_max == minus_inf ? 0.0 : libm_exp(old_max - block_max);
        softmax_max = block_max;
      }
    }
    barrier();
    const float m = softmax_max;
    block_scores[lane] = avx_exp(block_scores[lane] - m);  // masked keys: exactly 0
    barrier();
    if (lane == 0u) {
      precise float v[8];
      for (uint l = 0u; l < 8u; ++l) {
        precise float t = 0.0;
        for (uint c = 0u; c < BLOCK; c += 8u) t = t + block_scores[c + l];
        v[l] = t;
      }
      precise float sum = softmax_sum;
      if (grew) sum = sum * rescale;
      softmax_sum = sum + avx_hsum(v);
    }
    // P V: each output's chain goes on over the block's visible rows (the masked ones add
    // exact zeros on the CPU).
    for (uint i = 0u; i * 64u + lane < D; ++i) {
      const uint d = i * 64u + lane;
      precise float a = acc[i];
      if (grew) a = a * rescale;
      for (uint j = 0u; j < visible; ++j)
        a = FMA(kv_value(kv_row0 + (k0 + j) * row_stride, d, false), block_scores[j], a);
      acc[i] = a;
    }
    barrier();
  }
  precise float inv = 1.0 / softmax_sum;
  for (uint i = 0u; i * 64u + lane < D; ++i) {
    precise float out_value = acc[i] * inv;
    o[out_base + i * 64u + lane] = out_value;
  }
}

void main() {
  const uint head = gl_WorkGroupID.x, r = gl_WorkGroupID.y;
  const uint lane = gl_LocalInvocationID.x;
  const uint D = p.head_dim;
  const uint n = uint(position[r]) + 1u;
  const uint q_base = (r * p.heads + head) * D;
  for (uint d = lane; d < D; d += 64u) {
    precise float x = q[q_base + d];
    if (!GENERATED) x = x * p.scale;
    query[d] = x;
  }
  barrier();
  const uint kv_head = head / (p.heads / p.kv_heads);
  const uint kv_row0 = kv_head * p.head_words;
  const uint row_stride = p.kv_heads * p.head_words;
  if (GENERATED) {
    generated_row(n, kv_row0, row_stride, (r * p.heads + head) * p.scratch_stride, q_base);
  } else {
    prompt_row(n, kv_row0, row_stride, q_base);
  }
}
