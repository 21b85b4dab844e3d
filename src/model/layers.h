// The layer blocks the decoder is built from (model-spec §3), each a function of T normalised
// input rows [T][H] that writes T output rows [T][H] and updates its part of the state:
// gated / plain full attention, Gated DeltaNet, the dense SwiGLU MLP and the MoE block.
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

enum class DeltaRuleForm { kAuto, kRecurrent, kChunked };

void delta_net_layer(const DeltaNetWeights& w, const ModelConfig& c, const float* x, int T,
                     DeltaRuleForm form, RecurrentState& state, float* out);

void mlp_layer(const MlpWeights& w, const float* x, int T, float* out);

void moe_layer(const MoeWeights& w, const ModelConfig& c, const float* x, int T, float* out);

}  // namespace qmlx
