// ModelWeights: every tensor the forward pass reads, per layer, already mapped from the
// checkpoint's naming and layout (HF or MLX) to one canonical form. Matrices stay in their
// stored format (views into the mapping, or owned re-ordered copies for Qwen3-Next's interleaved
// projections); small vectors (norms, conv taps, dt_bias, A) are converted to float, with the
// +1 of zero-centred norms already folded in, so the forward pass has a single norm form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/affine_tiles.h"
#include "kernels/weight_matrix.h"
#include "model/vision_weights.h"

namespace qmlx {

struct AttentionWeights {
  WeightMatrix q, k, v, o;  // q has 2*D rows per head ([q_h | gate_h]) when gated
  std::vector<float> q_norm, k_norm;
};

struct DeltaNetWeights {
  WeightMatrix qkv, z, b, a, out;
  std::vector<float> conv;     // tap-major [K][conv_channels]
  std::vector<float> dt_bias;  // [Hv]
  std::vector<float> A;        // -exp(A_log), [Hv]
  std::vector<float> norm;     // gated RMSNorm weight [Dv]
  // out_proj input head i is value head out_heads[i] (empty: identity). llama.cpp's Qwen3.5
  // GGUF files keep out_proj's columns in tiled head order, which blocks cannot be permuted to.
  std::vector<int> out_heads;
};

struct MlpWeights {
  WeightMatrix gate, up, down;
};

struct MoeWeights {
  WeightMatrix router;              // [E, H]
  std::vector<MlpWeights> experts;  // E
  bool has_shared_expert = false;
  MlpWeights shared;
  WeightMatrix shared_gate;  // [1, H]
};

struct LayerWeights {
  bool full_attention = true;
  bool moe = false;
  std::vector<float> input_norm, post_norm;
  AttentionWeights attention;
  DeltaNetWeights delta_net;
  MlpWeights mlp;
  MoeWeights moe_ffn;
};

// The multi-token-prediction head of Qwen3.5 / Qwen3-Next checkpoints (`mtp.*`): both inputs
// RMS-normalised, [embedding | hidden] projected by fc [H, 2H], one full-attention decoder
// layer, a final norm; the embedding and the LM head are the model's own.
struct MtpWeights {
  WeightMatrix fc;                    // [H, 2H]: columns 0..H-1 take the embedding
  std::vector<float> embedding_norm;  // pre_fc_norm_embedding
  std::vector<float> hidden_norm;     // pre_fc_norm_hidden
  std::vector<float> final_norm;      // norm
  LayerWeights layer;                 // full attention, the model's MLP or MoE
};

struct ModelWeights {
  WeightMatrix embed;  // [V, H], also the head when tied
  WeightMatrix head;   // [V, H]
  std::vector<float> final_norm;
  std::vector<LayerWeights> layers;
  std::optional<MtpWeights> mtp;  // absent when the checkpoint has no whole MTP head
  // Why the checkpoint's MTP head was dropped at load, e.g. "incomplete (missing
  // mtp.norm.weight)" (optional_parts.h); empty when it loaded or there was none.
  std::string mtp_dropped;
  // The vision tower of a Qwen3.5 checkpoint, when it has a whole one (vision_weights.h), and
  // why one was dropped at load (empty when it loaded or there was none).
  std::optional<VisionWeights> vision;
  std::string vision_dropped;
  // Storage for matrices re-ordered at load (stored format, not dequantized).
  std::vector<std::vector<uint8_t>> owned;
  // Storage for the matrices tiled at load (model/weight_tiling.h).
  std::vector<AffineTileStorage> tiles;

  // Bytes of every matrix of the main model once (the head counted once when tied; the MTP
  // head is not counted: a plain decode step never reads it).
  size_t matrix_bytes() const;
};

}  // namespace qmlx
