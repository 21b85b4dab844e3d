// The MoE block's output on the device (shaders/moe_combine.comp), as ffn_layers.cpp's
// moe_layer assembles it:
//  - record_moe_combine: out[t] = sum over token t's k routes of weight * expert output, from
//    zero, one fma per route (vec::axpy) in ascending expert id, the order in which the CPU
//    walks its active experts, whatever the order of the routes;
//  - record_shared_expert_add: out[t] += sigmoid(gate[t]) * shared[t] (vec::axpy again).
// The combine is bit-identical to the CPU on devices with a correctly rounded fma (or emulated
// with float64: lavapipe). The shared add's sigmoid goes through the CPU's std::exp and the
// device's exp(), so the gate agrees to a few ulp and the sum to its share of that.
#pragma once

#include "backend/vulkan/command_recorder.h"

namespace qmlx::vulkan {

// routed: [T][k][H] floats, row (t, j) the output of expert ids[t][j] for token t, weighted by
// weights[t][j] (the router's outputs, moe_router.h; the ids of a token distinct); out:
// [T][H], overwritten. All from offset 0. k at most kMaxRouterTopK.
void record_moe_combine(CommandRecorder& recorder, const Buffer& routed, const Buffer& ids,
                        const Buffer& weights, int T, int k, int H, const Buffer& out);

// out, shared: [T][H]; gate: [T] (the shared expert gate's logit per token). From offset 0.
void record_shared_expert_add(CommandRecorder& recorder, const Buffer& out, const Buffer& shared,
                              const Buffer& gate, int T, int H);

}  // namespace qmlx::vulkan
