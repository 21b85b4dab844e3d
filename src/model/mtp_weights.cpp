// Loads the MTP head of a Qwen3.5 / Qwen3-Next checkpoint. Hugging Face files keep it at the top
// level (`mtp.fc.weight`, `mtp.pre_fc_norm_embedding.weight`, `mtp.pre_fc_norm_hidden.weight`,
// `mtp.norm.weight`, `mtp.layers.0.*`: the names vLLM's qwen3_next_mtp.py / qwen3_5_mtp.py
// load). MLX conversions (mlx-lm drops the head; files that keep it put it where mlx-lm's
// sanitize moves every top-level Qwen3.5 tensor) use `language_model.mtp.*`; `model.mtp.*` is
// accepted as llama.cpp's converter does. Its norms follow the checkpoint's convention (raw
// zero-centred in HF files, +1 folded in MLX files), like every other norm.
// A head missing any tensor, or with a malformed one, is dropped (optional_parts.h): the model
// loads without it.
#include "model/architectures.h"

namespace qmlx {

std::optional<MtpWeights> load_mtp_weights(const WeightLoader& stack,
                                           const DeltaNetProjections& load_projections,
                                           std::string& dropped) {
  const OptionalPart& part = mtp_head_part();
  const auto& c = stack.config();
  for (const char* root : part.roots) {
    // Any tensor under the root means the checkpoint meant to ship a head there.
    if (!stack.has_root(root)) continue;
    std::optional<MtpWeights> head;
    dropped = load_optional_part(part, [&](MissingTensors& missing) {
      WeightLoader w = stack.at_root(root, &missing);
      const int H = c.hidden_size;
      MtpWeights m;
      m.fc = w.matrix("fc", H, 2 * H);
      m.embedding_norm = w.norm("pre_fc_norm_embedding.weight", H, true);
      m.hidden_norm = w.norm("pre_fc_norm_hidden.weight", H, true);
      m.final_norm = w.norm("norm.weight", H, true);
      // A full-attention layer with the feed-forward block layer 0 of the stack would have
      // (vLLM builds it as layer index 0 of the model's own decoder-layer class).
      m.layer =
          load_hybrid_layer(w, 0, /*full_attention=*/true, c.is_moe_layer(0), load_projections);
      head = std::move(m);
    });
    if (!dropped.empty()) return std::nullopt;
    return head;
  }
  return std::nullopt;
}

}  // namespace qmlx
