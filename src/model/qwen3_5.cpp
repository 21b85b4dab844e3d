// Qwen3.5 (dense and MoE): hybrid layers of Gated DeltaNet (three of four) and gated full
// attention, zero-centred norms, SwiGLU or MoE feed-forward. HF names live under
// `model.language_model.`, MLX conversions under `language_model.model.`.
#include "model/architectures.h"

namespace qmlx {
namespace {

// Qwen3.5 keeps the projections separate: in_proj_qkv rows are [q heads | k heads | v heads].
void load_qwen3_5_projections(WeightLoader& w, int layer, DeltaNetWeights& d) {
  const auto& c = w.config();
  const std::string p = "layers." + std::to_string(layer) + ".linear_attn.";
  const int H = c.hidden_size, Hv = c.linear_value_heads;
  d.qkv = w.matrix(p + "in_proj_qkv", c.conv_channels(), H);
  d.z = w.matrix(p + "in_proj_z", c.linear_value_size(), H);
  d.b = w.matrix(p + "in_proj_b", Hv, H);
  d.a = w.matrix(p + "in_proj_a", Hv, H);
}

}  // namespace

LayerWeights load_hybrid_layer(WeightLoader& w, int l, bool full_attention, bool moe,
                               const DeltaNetProjections& load_projections) {
  const auto& c = w.config();
  const std::string p = "layers." + std::to_string(l) + ".";
  LayerWeights layer;
  layer.full_attention = full_attention;
  layer.moe = moe;
  layer.input_norm = w.norm(p + "input_layernorm.weight", c.hidden_size, true);
  layer.post_norm = w.norm(p + "post_attention_layernorm.weight", c.hidden_size, true);
  if (layer.full_attention) {
    layer.attention = load_attention(w, l, /*gated=*/true, /*zero_centred=*/true);
  } else {
    load_projections(w, l, layer.delta_net);
    load_delta_net_common(w, l, layer.delta_net);
  }
  if (layer.moe)
    layer.moe_ffn = load_moe(w, l);
  else
    layer.mlp = load_mlp(w, p + "mlp", c.hidden_size, c.intermediate_size);
  return layer;
}

ModelWeights load_hybrid_weights(const TensorStore& store, const ModelConfig& c,
                                 const DeltaNetProjections& load_projections) {
  ModelWeights weights;
  WeightLoader w(store, c, weights);
  w.load_globals(/*zero_centred_norms=*/true);
  for (int l = 0; l < c.num_layers; ++l)
    weights.layers.push_back(
        load_hybrid_layer(w, l, c.is_full_attention(l), c.is_moe_layer(l), load_projections));
  weights.mtp = load_mtp_weights(w, load_projections, weights.mtp_dropped);
  w.reject_unused();
  return weights;
}

ModelWeights load_qwen3_5_weights(const TensorStore& store, const ModelConfig& config) {
  ModelWeights weights = load_hybrid_weights(store, config, load_qwen3_5_projections);
  // Qwen3.5 is a vision-language model: its checkpoints carry a vision tower (optional here).
  WeightLoader w(store, config, weights);
  weights.vision = load_vision_weights(w, weights.vision_dropped);
  return weights;
}

}  // namespace qmlx
