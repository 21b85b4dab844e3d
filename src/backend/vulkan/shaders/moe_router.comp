#version 450
#extension GL_GOOGLE_include_directive : require
// The MoE router of one row per workgroup (moe_router.h): softmax over `experts` logits as
// kernels/activations.cpp's softmax, then the top `top_k` by libstdc++'s std::partial_sort
// (GCC 12, bits/stl_algo.h's __heap_select + __sort_heap over bits/stl_heap.h's
// __adjust_heap and __push_heap, repeated below step for step with the comparator
// probs[a] > probs[b]), so ties between equal probabilities resolve as on the CPU; then
// route_token's weights. No fma anywhere, so there is no _exact_fma variant.
#include "fma.glsl"
#include "avx_exp.glsl"

layout(local_size_x = 64) in;

const uint MAX_EXPERTS = 1024u;  // moe_router.h's kMaxRouterExperts
const uint MAX_TOP_K = 32u;      // and kMaxRouterTopK

layout(std430, binding = 0) readonly buffer Logits { float logits[]; };
layout(std430, binding = 1) writeonly buffer Ids { int ids[]; };
layout(std430, binding = 2) writeonly buffer Weights { float weights[]; };

layout(push_constant) uniform Push {
  uint experts;
  uint top_k;
  uint renormalize;  // 1: each weight divided by the sum of the top k
  uint logit_base;   // floats before row 0 of this dispatch
  uint id_base;      // ints before row 0's routes
  uint weight_base;
} p;

shared float probs[MAX_EXPERTS];
shared float lane_max[64];
shared float inv_sum;

// Lane 0's heap of expert ids, heap[0 .. top_k).
uint heap[MAX_TOP_K];

// partial_sort's comparator: a sorts before b.
bool before(uint a, uint b) { return probs[a] > probs[b]; }

// __adjust_heap(first, hole, len, value), __push_heap inlined at its end.
void adjust_heap(int hole, int len, uint value) {
  const int top = hole;
  int second = hole;
  while (second < (len - 1) / 2) {
    second = 2 * (second + 1);
    if (before(heap[second], heap[second - 1])) second--;
    heap[hole] = heap[second];
    hole = second;
  }
  if ((len & 1) == 0 && second == (len - 2) / 2) {
    second = 2 * (second + 1);
    heap[hole] = heap[second - 1];
    hole = second - 1;
  }
  while (hole > top) {
    const int parent = (hole - 1) / 2;
    if (!before(heap[parent], value)) break;
    heap[hole] = heap[parent];
    hole = parent;
  }
  heap[hole] = value;
}

// __make_heap over heap[0 .. len).
void make_heap(int len) {
  if (len < 2) return;
  for (int parent = (len - 2) / 2;; --parent) {
    adjust_heap(parent, len, heap[parent]);
    if (parent == 0) return;
  }
}

// __partial_sort(ids, ids + k, ids + E) over ids[i] = i: the heap select keeps the k that
// sort first (an id enters only when it sorts before the heap's top, which it evicts), then
// the heap sort orders them.
void partial_sort(int k, int n) {
  for (int i = 0; i < k; ++i) heap[i] = uint(i);
  make_heap(k);
  for (int i = k; i < n; ++i)
    if (before(uint(i), heap[0])) adjust_heap(0, k, uint(i));
  for (int last = k - 1; last > 0; --last) {
    const uint value = heap[last];
    heap[last] = heap[0];
    adjust_heap(0, last, value);
  }
}

void main() {
  const uint lane = gl_LocalInvocationID.x;
  const uint row = gl_WorkGroupID.x;
  const uint in_row = p.logit_base + row * p.experts;
  // The maximum (any order finds the same one).
  float m = uintBitsToFloat(0xff800000u);  // -infinity
  for (uint e = lane; e < p.experts; e += 64u) m = max(m, logits[in_row + e]);
  lane_max[lane] = m;
  barrier();
  m = lane_max[0];
  for (uint l = 1u; l < 64u; ++l) m = max(m, lane_max[l]);
  for (uint e = lane; e < p.experts; e += 64u) probs[e] = libm_exp(logits[in_row + e] - m);
  barrier();
  // The sum in the CPU's order, one element after another.
  if (lane == 0u) {
    precise float s = 0.0;
    for (uint e = 0u; e < p.experts; ++e) s += probs[e];
    inv_sum = 1.0 / s;
  }
  barrier();
  for (uint e = lane; e < p.experts; e += 64u) {
    precise float v = probs[e] * inv_sum;
    probs[e] = v;
  }
  barrier();
  if (lane != 0u) return;
  const int k = int(p.top_k);
  partial_sort(k, int(p.experts));
  precise float total = 0.0;
  for (int i = 0; i < k; ++i) total += probs[heap[i]];
  const uint out_row = row * p.top_k;
  for (int i = 0; i < k; ++i) {
    precise float w = probs[heap[i]];
    if (p.renormalize != 0u) w = w / total;
    ids[p.id_base + out_row + uint(i)] = int(heap[i]);
    weights[p.weight_base + out_row + uint(i)] = w;
  }
}
