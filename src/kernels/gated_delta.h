// The gated delta rule of Gated DeltaNet (model-spec §3.4 step 7, §3.6), per value head h with
// key head h / (Hv / Hk):
//   S <- exp(g_t) S;  S <- S + k_t (beta_t (v_t - S^T k_t))^T;  o_t = S^T q_t.
// State is stored transposed, [Hv][Dv][Dk], so every step is a contiguous dot or axpy over Dk.
// Two forms with the same result up to fp32 rounding: the recurrence, which the model runs for
// every T (prompt and generated tokens alike: its result for a token does not depend on how
// many tokens share the call), and the chunked WY form over chunks of 64 tokens, whose sums
// over a chunk do (kept for its tests and benchmarks). Heads are spread over default_pool().
#pragma once

#include <cstddef>

namespace qmlx {

struct GatedDeltaInputs {
  int T = 0, Hk = 0, Hv = 0, Dk = 0, Dv = 0;
  // Token t's q/k heads at q + t * row_stride ([Hk][Dk]) and v at v + t * row_stride ([Hv][Dv]);
  // q is already L2-normalised and scaled, k L2-normalised.
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  size_t row_stride = 0;
  const float* g = nullptr;     // [T][Hv], log of the decay (<= 0)
  const float* beta = nullptr;  // [T][Hv]
};

// state: [Hv][Dv][Dk], updated; out: [T][Hv][Dv].
void gated_delta_recurrent(const GatedDeltaInputs& in, float* state, float* out);
void gated_delta_chunked(const GatedDeltaInputs& in, float* state, float* out);

constexpr int kGatedDeltaChunk = 64;

}  // namespace qmlx
