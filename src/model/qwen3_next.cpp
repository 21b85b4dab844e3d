// Qwen3-Next: the same hybrid stack as Qwen3.5, stored differently. Its Gated DeltaNet input
// projections are interleaved per key-head group (in_proj_qkvz rows [q_g | k_g | v_g | z_g],
// in_proj_ba rows [b_g | a_g]); they are re-ordered once at load into Qwen3.5's [q | k | v], z,
// b, a order, so one forward pass serves both. Quantization groups run along the input
// dimension, so packed rows, scales and biases are permuted alike. HF stores one module per
// expert; MLX stacks them in switch_mlp (weight_loader handles both).
#include "model/architectures.h"

namespace qmlx {
namespace {

void load_qwen3_next_projections(WeightLoader& w, int layer, DeltaNetWeights& d) {
  const auto& c = w.config();
  const std::string p = "layers." + std::to_string(layer) + ".linear_attn.";
  const int H = c.hidden_size, Hk = c.linear_key_heads, Dk = c.linear_key_dim;
  const int r = c.linear_value_heads / Hk, Dv = c.linear_value_dim;
  const int group_rows = 2 * Dk + 2 * r * Dv;
  const int KD = c.linear_key_size(), VD = c.linear_value_size();

  // Destination order: all q, all k, all v, all z; each taken from its group's block.
  std::vector<int> qkvz_order;
  auto take = [&](int offset_in_group, int count) {
    for (int g = 0; g < Hk; ++g)
      for (int i = 0; i < count; ++i) qkvz_order.push_back(g * group_rows + offset_in_group + i);
  };
  take(0, Dk);                    // q
  take(Dk, Dk);                   // k
  take(2 * Dk, r * Dv);           // v
  take(2 * Dk + r * Dv, r * Dv);  // z
  WeightMatrix qkvz = w.matrix(p + "in_proj_qkvz", 2 * KD + 2 * VD, H);
  WeightMatrix ordered = w.permute_rows(qkvz, qkvz_order);
  d.qkv = ordered.row_slice(0, 2 * KD + VD);
  d.z = ordered.row_slice(2 * KD + VD, 2 * KD + 2 * VD);

  std::vector<int> ba_order;
  for (int part = 0; part < 2; ++part)
    for (int g = 0; g < Hk; ++g)
      for (int j = 0; j < r; ++j) ba_order.push_back(g * 2 * r + part * r + j);
  WeightMatrix ba =
      w.permute_rows(w.matrix(p + "in_proj_ba", 2 * c.linear_value_heads, H), ba_order);
  d.b = ba.row_slice(0, c.linear_value_heads);
  d.a = ba.row_slice(c.linear_value_heads, 2 * c.linear_value_heads);
}

}  // namespace

ModelWeights load_qwen3_next_weights(const TensorStore& store, const ModelConfig& config) {
  return load_hybrid_weights(store, config, load_qwen3_next_projections);
}

}  // namespace qmlx
