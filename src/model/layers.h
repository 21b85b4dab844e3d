// The layer blocks the decoder is built from (model-spec §3), each a function of T normalised
// input rows [T][H] that writes T output rows [T][H] and updates its part of the state:
// gated / plain full attention, Gated DeltaNet, the dense SwiGLU MLP and the MoE block, and the
// decoder layer that joins a mixer and a feed-forward block with their norms and residuals.
// The T rows are a ragged batch (RaggedRows): the rows of one or more sequences, each with its
// own state. The projections run once over all rows, so each weight is read once per batch; the
// parts that read or advance a sequence's state (RoPE, K/V append and attention, the causal
// conv and the delta rule) run per sequence.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/rope.h"
#include "model/config.h"
#include "model/model_state.h"
#include "model/row_kind.h"
#include "model/sequence_image.h"
#include "model/weights.h"

namespace qmlx {

// One sequence's rows in a ragged batch.
struct SequenceRows {
  int first = 0;         // index of its first row in the batch
  int count = 0;         // rows, at positions [position, position + count)
  int64_t position = 0;  // position of its first row
  RowKind kind = RowKind::kPrompt;
  ModelState* state = nullptr;  // its K/V rows and recurrent state
  // The sequence's images (absolute rows, model/sequence_image.h): where its rows take their
  // M-RoPE positions from. Empty for text.
  std::span<const SequenceImage> images = {};
  // Set by ragged_rows: the state's rope_delta once these rows are in.
  int64_t rope_delta_after = 0;
};

// The rows of a batched forward: the sequences' rows back to back, prompt sequences first, so
// that the kernels' generated rows are the last `generated` ones (kernels/matmul.h).
struct RaggedRows {
  int total = 0;      // all rows
  int generated = 0;  // the last `generated` rows are generated rows
  std::vector<SequenceRows> sequences;
  std::vector<RopeAngles> angles;  // one per row, at its position (attention layers only)
};

// The RoPE angles of a row at M-RoPE position `p`: plain RoPE at p.t where the three agree
// (every text row, so text is computed exactly as without images), else M-RoPE over the
// config's sections. Throws qmlx::Error when they differ and the config has no mrope_section.
RopeAngles rope_angles_at(const RopePosition& p, const ModelConfig& c);

// Builds the rows of `sequences` (each with count, kind and state set, prompt ones first):
// first rows, positions (the states' positions), rope_delta_after and, when rotary_dim > 0,
// RoPE angles at each row's M-RoPE position (model/image_rows.h). Throws qmlx::Error when an
// image row needs M-RoPE the config does not have.
RaggedRows ragged_rows(std::vector<SequenceRows> sequences, const ModelConfig& c);

// `slot`: which of each sequence's per-layer states the layer uses (state->kv[slot] for an
// attention layer, state->recurrent[slot] for a Gated DeltaNet layer).
void attention_layer(const AttentionWeights& w, const ModelConfig& c, const float* x,
                     const RaggedRows& rows, size_t slot, float* out);

// kAuto is the token recurrence: the one form that is split-invariant (delta_net_layer.cpp).
// kChunked (the WY form over 64-token chunks) stays for its tests and benchmarks.
enum class DeltaRuleForm { kAuto, kRecurrent, kChunked };

void delta_net_layer(const DeltaNetWeights& w, const ModelConfig& c, const float* x,
                     const RaggedRows& rows, size_t slot, DeltaRuleForm form, float* out);

// Per-row blocks: T rows, the last `generated_rows` of them generated rows.
void mlp_layer(const MlpWeights& w, const float* x, int T, int generated_rows, float* out);

// Each route's expert MLP over its token's row, unweighted: out[t * k + j] = expert e(x[t]) for
// e = expert_ids[t * k + j] (k = c.experts_per_token; out: [T * k][H]). Each expert runs once
// over all the rows routed to it, and a route's result depends on its row, its expert and its
// row kind only (the last `generated_rows` tokens are generated rows). moe_layer's experts, and
// the CPU's half of a device forward pass that keeps the experts in host memory (--cpu-moe).
void routed_experts(const std::vector<MlpWeights>& experts, const ModelConfig& c, const float* x,
                    int T, int generated_rows, const int32_t* expert_ids, float* out);

void moe_layer(const MoeWeights& w, const ModelConfig& c, const float* x, int T, int generated_rows,
               float* out);

// Rows a decoder layer works in, kept by the caller so a stack of layers allocates them once.
struct LayerScratch {
  std::vector<float> normed, delta;
};

// One decoder layer (model-spec §3.2) over the rows of the residual stream h [rows.total][H]:
//   h += Mixer(RMSNorm_in(h));  h += FFN(RMSNorm_post(h))
// A full-attention layer appends each sequence's K/V rows to its state->kv[slot]; a Gated
// DeltaNet layer advances its state->recurrent[slot].
void decoder_layer(const LayerWeights& layer, const ModelConfig& c, float* h,
                   const RaggedRows& rows, size_t slot, DeltaRuleForm form, LayerScratch& scratch);

}  // namespace qmlx
