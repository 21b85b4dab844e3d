// Loads a Qwen3.5 vision tower from Hugging Face names (transformers' Qwen3_5VisionModel under
// `model.visual.`; older exports put it at `visual.`):
//   patch_embed.proj.{weight [hidden, channels, temporal, patch, patch], bias}
//   pos_embed.weight [num_position_embeddings, hidden]
//   blocks.N.{norm1,norm2}.{weight,bias}, blocks.N.attn.{qkv,proj}.{weight,bias},
//   blocks.N.mlp.{linear_fc1,linear_fc2}.{weight,bias}
//   merger.norm.{weight,bias}, merger.linear_fc1.{weight,bias}, merger.linear_fc2.{weight,bias}
// DeepStack mergers (Qwen3-VL's deepstack_merger_list) do not exist in Qwen3.5.
#include "model/vision_weights.h"

#include "base/error.h"
#include "base/logging.h"
#include "model/weight_loader.h"

namespace qmlx {
namespace {

// The roots whose tensors carry the Hugging Face names above.
constexpr const char* kHfRoots[] = {"model.visual.", "visual."};

BiasedLinear biased_linear(WeightLoader& w, const std::string& module, int out, int in) {
  return {w.matrix(module, out, in), w.vector(module + ".bias", out)};
}

LayerNormWeights layer_norm(WeightLoader& w, const std::string& module, int n) {
  return {w.vector(module + ".weight", n), w.vector(module + ".bias", n)};
}

VisionWeights read_tower(WeightLoader& w, const VisionConfig& c) {
  const int H = c.hidden_size, I = c.intermediate_size, merged = H * c.merge_unit();
  VisionWeights v;
  v.config = c;
  v.patch_embed.weight = w.reshaped(
      "patch_embed.proj.weight",
      {H, c.in_channels, c.temporal_patch_size, c.patch_size, c.patch_size}, H, c.patch_dim());
  v.patch_embed.bias = w.vector("patch_embed.proj.bias", H);
  v.pos_embed = w.matrix("pos_embed", c.num_position_embeddings, H);
  for (int b = 0; b < c.depth; ++b) {
    const std::string p = "blocks." + std::to_string(b) + ".";
    VisionBlockWeights block;
    block.norm1 = layer_norm(w, p + "norm1", H);
    block.norm2 = layer_norm(w, p + "norm2", H);
    block.qkv = biased_linear(w, p + "attn.qkv", 3 * H, H);
    block.proj = biased_linear(w, p + "attn.proj", H, H);
    block.fc1 = biased_linear(w, p + "mlp.linear_fc1", I, H);
    block.fc2 = biased_linear(w, p + "mlp.linear_fc2", H, I);
    v.blocks.push_back(std::move(block));
  }
  v.merger_norm = layer_norm(w, "merger.norm", H);
  v.merger_fc1 = biased_linear(w, "merger.linear_fc1", merged, merged);
  v.merger_fc2 = biased_linear(w, "merger.linear_fc2", c.out_hidden_size, merged);
  return v;
}

}  // namespace

std::optional<VisionWeights> load_vision_weights(const WeightLoader& stack, std::string& dropped) {
  const OptionalPart& part = vision_tower_part();
  const ModelConfig& config = stack.config();
  for (const char* root : part.roots) {
    if (!stack.has_root(root)) continue;
    const bool hf = std::string(root) == kHfRoots[0] || std::string(root) == kHfRoots[1];
    std::optional<VisionWeights> tower;
    dropped = load_optional_part(part, [&](MissingTensors& missing) {
      if (!hf) throw Error("mlx-vlm's " + std::string(root) + "* layout is not read yet");
      if (!config.vision)
        throw Error(config.vision_config_error.empty() ? "config.json has no vision_config"
                                                       : config.vision_config_error);
      if (config.vision->out_hidden_size != config.hidden_size)
        throw Error(
            "vision_config out_hidden_size " + std::to_string(config.vision->out_hidden_size) +
            " is not the language model's hidden_size " + std::to_string(config.hidden_size));
      WeightLoader w = stack.at_root(root, &missing);
      tower = read_tower(w, *config.vision);
    });
    if (!dropped.empty()) return std::nullopt;
    return tower;
  }
  if (config.vision) log_info("model: the checkpoint has no vision tower; images are not read");
  return std::nullopt;
}

}  // namespace qmlx
