// The body of moe_combine.comp and moe_combine_exact_fma.comp (fma.glsl says why two).
// The MoE block's output for one token per workgroup row (moe_combine.h):
//   OP 0: out = 0, then out = fma(weights[j], rows[j], out) for the token's routes j in
//         ascending expert id (moe_layer walks its active experts so; vec::axpy is an fma);
//   OP 1: out = fma(sigmoid(weights[0]), rows[0], out), the shared expert's gated add.
#include "fma.glsl"
#include "avx_exp.glsl"

layout(local_size_x = 64) in;

layout(constant_id = 0) const uint OP = 0;

const uint MAX_ROUTES = 32u;  // moe_router.h's kMaxRouterTopK

layout(std430, binding = 0) readonly buffer Rows { float rows[]; };
layout(std430, binding = 1) readonly buffer Ids { int ids[]; };
layout(std430, binding = 2) readonly buffer Weights { float weights[]; };
layout(std430, binding = 3) buffer Output { float y[]; };

layout(push_constant) uniform Push {
  uint routes;  // rows per token (OP 1: 1)
  uint cols;
  uint row_base;  // floats before token 0's first row
  uint id_base;   // route ids (and weights) before token 0's
  uint weight_base;
  uint out_base;  // floats before token 0's output
} p;

// The token's routes in ascending expert id (OP 0).
shared uint order[MAX_ROUTES];

void main() {
  const uint token = gl_WorkGroupID.y;
  const uint route0 = token * p.routes;
  if (OP == 0u && gl_LocalInvocationID.x == 0u) {
    // Insertion sort of the route slots by expert id (ids of a token are distinct).
    for (uint j = 0u; j < p.routes; ++j) {
      const int id = ids[p.id_base + route0 + j];
      uint i = j;
      for (; i > 0u && ids[p.id_base + route0 + order[i - 1u]] > id; --i) order[i] = order[i - 1u];
      order[i] = j;
    }
  }
  barrier();
  const uint out_row = p.out_base + token * p.cols;
  const uint stride = gl_NumWorkGroups.x * 64u;
  for (uint c = gl_GlobalInvocationID.x; c < p.cols; c += stride) {
    precise float acc;
    if (OP == 0u) {
      acc = 0.0;
      for (uint j = 0u; j < p.routes; ++j) {
        const uint slot = order[j];
        acc = FMA(weights[p.weight_base + route0 + slot],
                  rows[p.row_base + (route0 + slot) * p.cols + c], acc);
      }
    } else {
      acc = FMA(scalar_sigmoid(weights[p.weight_base + token]), rows[p.row_base + token * p.cols + c],
                y[out_row + c]);
    }
    y[out_row + c] = acc;
  }
}
