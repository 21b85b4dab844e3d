// The MoE router on the device (shaders/moe_router.comp): per row of router logits, the
// softmax over the experts and the top k of it, renormalised when the model says so, as
// ffn_layers.cpp's route_token computes them: softmax() (max subtracted, std::exp, one
// sequential sum, a multiply by its reciprocal), std::partial_sort of the expert ids by
// descending probability, then p / (sum of the k in that order).
//
// Ids: the shader repeats libstdc++'s partial_sort (a heap select and a heap sort, GCC 12's
// bits/stl_heap.h step for step), so the experts chosen and their order are the CPU's, ties
// included, wherever the probabilities compare the same. Weights: the CPU's std::exp and the
// device's exp() differ by a few ulp, so probabilities and weights agree to a few ulp, not to
// the bit, and an expert whose probability is within that of the k-th may be chosen on one side
// only (moe_router_test.cpp). Exact ties in the logits stay exact ties on both sides.
#pragma once

#include "backend/vulkan/command_recorder.h"

namespace qmlx::vulkan {

// The most experts and experts per token the shader holds (Qwen3-Next: 512 and 10).
constexpr int kMaxRouterExperts = 1024;
constexpr int kMaxRouterTopK = 32;

// logits: [T][E] floats (read only); ids: [T][k] int32 and weights: [T][k] floats, written in
// the CPU's route order. All from offset 0. Throws for E or k beyond the limits above.
void record_moe_route(CommandRecorder& recorder, const Buffer& logits, int T, int E, int k,
                      bool renormalize, const Buffer& ids, const Buffer& weights);

}  // namespace qmlx::vulkan
