// Loads a Qwen3.5 vision tower from Hugging Face names (transformers' Qwen3_5VisionModel under
// `model.visual.`; older exports put it at `visual.`) or mlx-vlm's (the same names under
// `vision_tower.`, as mlx-vlm's Qwen3-VL / Qwen3.5 sanitize renames `model.visual`):
//   patch_embed.proj.{weight, bias}: PyTorch's Conv3d [hidden, channels, temporal, patch, patch];
//     mlx-vlm stores MLX's channels-last [hidden, temporal, patch, patch, channels]
//   pos_embed.weight [num_position_embeddings, hidden]
//   blocks.N.{norm1,norm2}.{weight,bias}, blocks.N.attn.{qkv,proj}.{weight,bias},
//   blocks.N.mlp.{linear_fc1,linear_fc2}.{weight,bias}
//   merger.norm.{weight,bias}, merger.linear_fc1.{weight,bias}, merger.linear_fc2.{weight,bias}
// mlx-vlm keeps towers unquantized (its quantization predicate skips `vision_tower` modules);
// an older conversion's MLX-quantized Linear or Embedding is read as an affine matrix all the
// same (WeightLoader::matrix). DeepStack mergers (Qwen3-VL's deepstack_merger_list) do not exist
// in Qwen3.5.
#include "model/vision_weights.h"

#include "base/error.h"
#include "base/logging.h"
#include "model/weight_loader.h"

namespace qmlx {
namespace {

BiasedLinear biased_linear(VisionTensorSource& s, const std::string& module, int out, int in) {
  return {s.matrix(module, out, in), s.vector(module + ".bias", out)};
}

LayerNormWeights layer_norm(VisionTensorSource& s, const std::string& module, int n) {
  return {s.vector(module + ".weight", n), s.vector(module + ".bias", n)};
}

bool is_mlx_root(const std::string& root) {
  return root.find("vision_tower.") != std::string::npos;
}

// A safetensors checkpoint's tower under one root, in the Hugging Face or the mlx-vlm layout.
class SafetensorsTower : public VisionTensorSource {
 public:
  SafetensorsTower(WeightLoader w, bool mlx) : w_(std::move(w)), mlx_(mlx) {}

  WeightMatrix matrix(const std::string& module, int rows, int cols) override {
    return w_.matrix(module, rows, cols);
  }
  std::vector<float> vector(const std::string& tensor, int n) override {
    return w_.vector(tensor, n);
  }
  WeightMatrix patch_embed(const VisionConfig& c) override {
    const int H = c.hidden_size, C = c.in_channels, T = c.temporal_patch_size, P = c.patch_size;
    const std::string name = "patch_embed.proj.weight";
    if (!mlx_) return w_.reshaped(name, {H, C, T, P, P}, H, c.patch_dim());
    // Channels last to channels first: a one-time copy at load, so the encoder's matmul reads
    // the columns in a pixel_values row's order whatever the layout.
    return w_.transposed(name, {H, T, P, P, C}, {0, 4, 1, 2, 3}, H, c.patch_dim());
  }

 private:
  WeightLoader w_;
  bool mlx_;
};

}  // namespace

VisionWeights read_vision_tower(VisionTensorSource& s, const VisionConfig& c) {
  const int H = c.hidden_size, I = c.intermediate_size, merged = H * c.merge_unit();
  VisionWeights v;
  v.config = c;
  v.patch_embed.weight = s.patch_embed(c);
  v.patch_embed.bias = s.vector("patch_embed.proj.bias", H);
  v.pos_embed = s.matrix("pos_embed", c.num_position_embeddings, H);
  for (int b = 0; b < c.depth; ++b) {
    const std::string p = "blocks." + std::to_string(b) + ".";
    VisionBlockWeights block;
    block.norm1 = layer_norm(s, p + "norm1", H);
    block.norm2 = layer_norm(s, p + "norm2", H);
    block.qkv = biased_linear(s, p + "attn.qkv", 3 * H, H);
    block.proj = biased_linear(s, p + "attn.proj", H, H);
    block.fc1 = biased_linear(s, p + "mlp.linear_fc1", I, H);
    block.fc2 = biased_linear(s, p + "mlp.linear_fc2", H, I);
    v.blocks.push_back(std::move(block));
  }
  v.merger_norm = layer_norm(s, "merger.norm", H);
  v.merger_fc1 = biased_linear(s, "merger.linear_fc1", merged, merged);
  v.merger_fc2 = biased_linear(s, "merger.linear_fc2", c.out_hidden_size, merged);
  return v;
}

std::optional<VisionWeights> load_vision_weights(const WeightLoader& stack, std::string& dropped) {
  const OptionalPart& part = vision_tower_part();
  const ModelConfig& config = stack.config();
  for (const char* root : part.roots) {
    if (!stack.has_root(root)) continue;
    std::optional<VisionWeights> tower;
    dropped = load_optional_part(part, [&](MissingTensors& missing) {
      if (!config.vision)
        throw Error(config.vision_config_error.empty() ? "config.json has no vision_config"
                                                       : config.vision_config_error);
      if (config.vision->out_hidden_size != config.hidden_size)
        throw Error(
            "vision_config out_hidden_size " + std::to_string(config.vision->out_hidden_size) +
            " is not the language model's hidden_size " + std::to_string(config.hidden_size));
      SafetensorsTower source(stack.at_root(root, &missing), is_mlx_root(root));
      tower = read_vision_tower(source, *config.vision);
    });
    if (!dropped.empty()) return std::nullopt;
    return tower;
  }
  if (config.vision) log_info("model: the checkpoint has no vision tower; images are not read");
  return std::nullopt;
}

}  // namespace qmlx
