// Qwen3 (dense): every layer is plain full attention (no output gate, standard RMSNorm weights
// including q/k norms, RoPE over the whole head) followed by a SwiGLU MLP.
#include "model/architectures.h"

namespace qmlx {

ModelWeights load_qwen3_weights(const TensorStore& store, const ModelConfig& c) {
  ModelWeights weights;
  WeightLoader w(store, c, weights);
  w.load_globals(/*zero_centred_norms=*/false);
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    LayerWeights layer;
    layer.input_norm = w.norm(p + "input_layernorm.weight", c.hidden_size, false);
    layer.post_norm = w.norm(p + "post_attention_layernorm.weight", c.hidden_size, false);
    layer.attention = load_attention(w, l, /*gated=*/false, /*zero_centred=*/false);
    layer.mlp = load_mlp(w, p + "mlp", c.hidden_size, c.intermediate_size);
    weights.layers.push_back(std::move(layer));
  }
  w.reject_unused();
  return weights;
}

}  // namespace qmlx
