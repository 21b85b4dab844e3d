// The decoder layer shared by the main stack and the MTP head (model-spec §3.2): pre-norm
// residual blocks, the mixer chosen by the layer (gated attention or Gated DeltaNet) and the
// feed-forward block chosen by it (MoE or SwiGLU).
#include "kernels/norms.h"
#include "kernels/vec.h"
#include "model/layers.h"

namespace qmlx {

void decoder_layer(const LayerWeights& layer, const ModelConfig& c, float* h,
                   const RaggedRows& rows, size_t slot, DeltaRuleForm form, LayerScratch& scratch) {
  const int H = c.hidden_size, T = rows.total, G = rows.generated;
  const size_t n = size_t(T) * H;
  if (scratch.normed.size() < n) scratch.normed.resize(n);
  if (scratch.delta.size() < n) scratch.delta.resize(n);
  float* normed = scratch.normed.data();
  float* delta = scratch.delta.data();
  auto norm_rows = [&](const std::vector<float>& w) {
    for (int t = 0; t < T; ++t)
      rms_norm(h + size_t(t) * H, w.data(), H, c.rms_norm_eps, normed + size_t(t) * H);
  };
  norm_rows(layer.input_norm);
  if (layer.full_attention)
    attention_layer(layer.attention, c, normed, rows, slot, delta);
  else
    delta_net_layer(layer.delta_net, c, normed, rows, slot, form, delta);
  vec::axpy(h, 1.f, delta, n);
  norm_rows(layer.post_norm);
  if (layer.moe)
    moe_layer(layer.moe_ffn, c, normed, T, G, delta);
  else
    mlp_layer(layer.mlp, normed, T, G, delta);
  vec::axpy(h, 1.f, delta, n);
}

}  // namespace qmlx
