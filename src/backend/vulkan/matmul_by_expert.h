// Matmul by expert id on the device: the routed experts of a MoE block computed in the same
// submission as the router that picks them (moe_router.h), with no read-back of its choice.
// For every route r = t * k + j (token t's j-th expert, e = ids[t][j]):
//   y[r] = W_e x[t]  (ExpertInput::kToken: gate and up read the token's row)
//   y[r] = W_e x[r]  (ExpertInput::kRoute: down reads the route's own row)
// Each output is computed by the plain matmul's arithmetic (shaders/matmul_float_dot.glsl and
// matmul_affine_dot.glsl), so y[r] is bit-identical to record_matmul of W_e over x's row, and
// never depends on the batch or on which experts the other routes picked.
//
// Why stacked: a shader can only address a matrix the dispatch binds, and the expert is known on
// the device only. So all E matrices of one projection lie back to back in one DeviceMatrix
// (upload_experts), and a dispatch binds the experts that fit one binding window
// (binding_window.h; lavapipe binds 128 MiB): one dispatch where the device binds the whole
// stack (most GPUs bind 4 GiB), one per window of experts elsewhere, each skipping the routes
// whose expert it does not hold. Every route's work is the same whichever dispatch does it.
#pragma once

#include <span>

#include "backend/vulkan/matmul.h"

namespace qmlx::vulkan {

// One projection (gate, up or down) of a layer's E experts: E matrices of one format and shape
// [rows][cols], expert e's rows at rows [e * rows, (e + 1) * rows) of `stacked`.
struct DeviceExperts {
  int experts = 0;
  int rows = 0;  // of one expert's matrix
  DeviceMatrix stacked;
};

// Throws qmlx::Error when the matrices differ in format or shape or the device cannot run them.
DeviceExperts upload_experts(Context& context, std::span<const WeightMatrix* const> experts);

enum class ExpertInput {
  kToken,  // x: [T][cols]; the k routes of token t read row t
  kRoute,  // x: [T * k][cols]; route r reads row r
};

// ids: [T][k] int32 expert ids in [0, experts) (moe_router.h's); y: [T * k][w.rows] floats,
// overwritten. All from offset 0.
void record_matmul_by_expert(CommandRecorder& recorder, const DeviceExperts& w, const Buffer& x,
                             ExpertInput input, const Buffer& ids, int T, int k, const Buffer& y);

}  // namespace qmlx::vulkan
