#include "model/mmproj_weights.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "model/axis_permutation.h"
#include "model/gguf_reader.h"
#include "model/optional_parts.h"

namespace qmlx {
namespace {

// llama.cpp's converter (Qwen3VLVisionModel, which Qwen3.5's checkpoints use too) writes this
// projector type; Qwen2-VL's and Qwen2.5-VL's mergers are other towers.
constexpr const char* kProjector = "qwen3vl_merger";

// The mmproj name of a module named as in Hugging Face files (vision_weights.h).
std::string mmproj_module(const std::string& module) {
  static const std::pair<const char*, const char*> kTop[] = {{"patch_embed.proj", "v.patch_embd"},
                                                             {"pos_embed", "v.position_embd"},
                                                             {"merger.norm", "v.post_ln"},
                                                             {"merger.linear_fc1", "mm.0"},
                                                             {"merger.linear_fc2", "mm.2"}};
  static const std::pair<const char*, const char*> kBlock[] = {{"norm1", "ln1"},
                                                               {"norm2", "ln2"},
                                                               {"attn.qkv", "attn_qkv"},
                                                               {"attn.proj", "attn_out"},
                                                               {"mlp.linear_fc1", "ffn_up"},
                                                               {"mlp.linear_fc2", "ffn_down"}};
  for (const auto& [hf, gguf] : kTop)
    if (module == hf) return gguf;
  if (module.starts_with("blocks.")) {
    const size_t dot = module.find('.', 7);
    const std::string rest = module.substr(dot + 1);
    for (const auto& [hf, gguf] : kBlock)
      if (rest == hf) return "v.blk." + module.substr(7, dot - 7) + "." + gguf;
  }
  throw Error("mmproj: no tensor name for the tower's " + module);
}

class MmprojTower : public VisionTensorSource {
 public:
  MmprojTower(GgufWeightReader& r, ModelWeights& owner) : r_(r), owner_(owner) {}

  WeightMatrix matrix(const std::string& module, int rows, int cols) override {
    return r_.matrix(mmproj_module(module) + ".weight", rows, cols);
  }
  std::vector<float> vector(const std::string& tensor, int n) override {
    const size_t dot = tensor.rfind('.');
    return r_.vector(mmproj_module(tensor.substr(0, dot)) + tensor.substr(dot), n);
  }
  // llama.cpp splits the Conv3d [H, C, 2, P, P] along time into two Conv2d kernels
  // [H, C, P, P] and adds their outputs over the same frame; stacked back along time (a
  // one-time copy at load, in the stored type) they are the Conv3d, which pixel_values rows
  // (both temporal copies) meet as one matmul.
  WeightMatrix patch_embed(const VisionConfig& c) override {
    const int H = c.hidden_size, C = c.in_channels, P = c.patch_size;
    const GgufTensor* first = r_.take("v.patch_embd.weight");
    const GgufTensor* second = r_.take("v.patch_embd.weight.1");
    if (!first || !second) return {};
    const std::vector<int64_t> ne = {P, P, C, H};
    for (const GgufTensor* t : {first, second}) {
      if (t->ne != ne) r_.fail(*t, "wrong shape, expected " + GgufWeightReader::dims(ne));
      if (t->type != first->type) r_.fail(*t, "the two temporal slices differ in type");
    }
    WeightMatrix m;
    m.format = weight_format_of(first->type);
    if (m.format == WeightFormat::kGguf) {
      r_.fail(*first, "the patch embedding must be F32, F16 or BF16");
    }
    const size_t elem = m.format == WeightFormat::kF32 ? 4 : 2;
    std::vector<uint8_t> slices(first->data, first->data + first->bytes);
    slices.insert(slices.end(), second->data, second->data + second->bytes);
    owner_.owned.push_back(
        transposed_elements(slices.data(), elem, {2, H, C, P, P}, {1, 2, 0, 3, 4}));
    m.rows = H;
    m.cols = c.patch_dim();
    m.data = owner_.owned.back().data();
    return m;
  }

 private:
  GgufWeightReader& r_;
  ModelWeights& owner_;
};

// The tower's shape from the clip.* keys and the tensors' shapes; qmlx::Error naming the file
// for anything that is not a Qwen3-VL-style tower.
VisionConfig mmproj_config(const GgufFile& f) {
  const GgufMetadata m(f);
  std::string projector;
  for (const char* key : {"clip.vision.projector_type", "clip.projector_type"})
    if (m.find(key)) projector = m.string(key);
  if (projector != kProjector)
    throw Error(f.path() + ": projector type '" + projector + "' is not " + kProjector +
                " (the Qwen3-VL / Qwen3.5 merger)");
  const auto flag = [&](const char* key) {
    const nlohmann::json* v = m.find(key);
    return v && v->is_boolean() && v->get<bool>();
  };
  if (m.find("clip.has_vision_encoder") && !flag("clip.has_vision_encoder"))
    throw Error(f.path() + ": clip.has_vision_encoder is false");
  if (flag("clip.use_silu")) throw Error(f.path() + ": a SiLU tower is not Qwen's (GELU)");
  const GgufTensor* patch = f.find("v.patch_embd.weight");
  const GgufTensor* positions = f.find("v.position_embd.weight");
  const GgufTensor* fc2 = f.find("mm.2.weight");
  nlohmann::json v = {{"depth", m.integer("clip.vision.block_count")},
                      {"hidden_size", m.integer("clip.vision.embedding_length")},
                      {"num_heads", m.integer("clip.vision.attention.head_count")},
                      {"intermediate_size", m.integer("clip.vision.feed_forward_length")},
                      {"patch_size", m.integer("clip.vision.patch_size")},
                      // The converter requires the Conv3d's 2 and writes the slices as two tensors.
                      {"temporal_patch_size", 2},
                      {"spatial_merge_size", m.integer("clip.vision.spatial_merge_size", 2)},
                      {"out_hidden_size", m.integer("clip.vision.projection_dim",
                                                    fc2 && fc2->ne.size() == 2 ? fc2->ne[1] : 0)},
                      {"hidden_act", "gelu_pytorch_tanh"}};
  if (patch && patch->ne.size() == 4) v["in_channels"] = patch->ne[2];
  if (positions && positions->ne.size() == 2) v["num_position_embeddings"] = positions->ne[1];
  VisionConfig c = VisionConfig::from_json(v, f.path());
  c.layer_norm_eps = float(m.number("clip.vision.attention.layer_norm_epsilon", 1e-6));
  return c;
}

}  // namespace

std::optional<VisionWeights> load_mmproj_vision(const GgufFile& file, int hidden_size,
                                                ModelWeights& owner, std::string& dropped) {
  GgufWeightReader r(file, std::string("a ") + kProjector + " vision tower");
  std::optional<VisionWeights> tower;
  dropped = load_optional_part(vision_tower_part(), [&](MissingTensors& missing) {
    const VisionConfig c = mmproj_config(file);
    if (c.out_hidden_size != hidden_size)
      throw Error(file.path() + ": projection_dim " + std::to_string(c.out_hidden_size) +
                  " is not the language model's hidden_size " + std::to_string(hidden_size));
    r.collect_missing(&missing);
    MmprojTower source(r, owner);
    tower = read_vision_tower(source, c);
    if (missing.empty()) r.reject_unused();
  });
  if (!dropped.empty()) return std::nullopt;
  return tower;
}

}  // namespace qmlx
