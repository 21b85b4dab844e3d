// The layer blocks the decoder is built from (model-spec §3), each a function of T normalised
// input rows [T][H] that writes T output rows [T][H] and updates its part of the state:
// gated / plain full attention, Gated DeltaNet, the dense SwiGLU MLP and the MoE block, and the
// decoder layer that joins a mixer and a feed-forward block with their norms and residuals.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/rope.h"
#include "model/config.h"
#include "model/model_state.h"
#include "model/weights.h"

namespace qmlx {

struct AttentionContext {
  int64_t position = 0;                   // position of input row 0
  const std::vector<RopeAngles>* angles;  // one per input row
  KvType kv_type = KvType::kF32;
  size_t kv_row_bytes = 0;
};

void attention_layer(const AttentionWeights& w, const ModelConfig& c, const float* x, int T,
                     const AttentionContext& ctx, KvCache& cache, float* out);

// kAuto is the token recurrence: the one form that is split-invariant (delta_net_layer.cpp).
// kChunked (the WY form over 64-token chunks) stays for its tests and benchmarks.
enum class DeltaRuleForm { kAuto, kRecurrent, kChunked };

void delta_net_layer(const DeltaNetWeights& w, const ModelConfig& c, const float* x, int T,
                     DeltaRuleForm form, RecurrentState& state, float* out);

void mlp_layer(const MlpWeights& w, const float* x, int T, float* out);

void moe_layer(const MoeWeights& w, const ModelConfig& c, const float* x, int T, float* out);

// Rows a decoder layer works in, kept by the caller so a stack of layers allocates them once.
struct LayerScratch {
  std::vector<float> normed, delta;
};

// One decoder layer (model-spec §3.2) over T rows of the residual stream h [T][H]:
//   h += Mixer(RMSNorm_in(h));  h += FFN(RMSNorm_post(h))
// A full-attention layer appends its K/V rows to `kv`; a Gated DeltaNet layer advances
// `recurrent` (the one the layer does not use may be null).
void decoder_layer(const LayerWeights& layer, const ModelConfig& c, float* h, int T,
                   const AttentionContext& ctx, KvCache* kv, RecurrentState* recurrent,
                   DeltaRuleForm form, LayerScratch& scratch);

}  // namespace qmlx
