#include "modelgen/mmproj_writer.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "modelgen/gguf_file_writer.h"
#include "modelgen/random_weights.h"
#include "modelgen/tokenizer_files.h"

namespace qmlx::modelgen {
namespace {

using Values = std::function<std::vector<float>()>;

GgufQuant matrix_type(TensorDType dtype) {
  switch (dtype) {
    case TensorDType::kF16:
      return GgufQuant::kF16;
    case TensorDType::kBF16:
      return GgufQuant::kBF16;
    default:
      return GgufQuant::kF32;
  }
}

class MmprojLayout {
 public:
  MmprojLayout(const ModelOptions& options, const LogicalModel& model, GgufFileWriter& writer,
               std::optional<GgufQuant> matrices)
      : options_(options),
        model_(model),
        writer_(writer),
        matrices_(matrices.value_or(matrix_type(options.dtype))) {}

  void add_tensors() {
    const VisionShape& v = options_.shape.vision_tower;
    if (v.temporal_patch != 2)
      throw Error("an mmproj splits the patch embedding into 2 temporal slices (llama.cpp's)");
    add_patch_embedding();
    vector("v.patch_embd.bias", "visual.patch_embed.proj.bias");
    // The converter keeps the position grid in F32 whatever the output type (POS_EMBD and
    // V_ENC_EMBD_POS are among its always-F32 tensors; mtmd adds it to F32 rows).
    vector("v.position_embd.weight", "visual.pos_embed.weight");
    for (int b = 0; b < v.depth; ++b) {
      const std::string hf = "visual.blocks." + std::to_string(b) + ".";
      const std::string gg = "v.blk." + std::to_string(b) + ".";
      layer_norm(gg + "ln1", hf + "norm1");
      layer_norm(gg + "ln2", hf + "norm2");
      linear(gg + "attn_qkv", hf + "attn.qkv");
      linear(gg + "attn_out", hf + "attn.proj");
      linear(gg + "ffn_up", hf + "mlp.linear_fc1");
      linear(gg + "ffn_down", hf + "mlp.linear_fc2");
    }
    layer_norm("v.post_ln", "visual.merger.norm");
    linear("mm.0", "visual.merger.linear_fc1");
    linear("mm.2", "visual.merger.linear_fc2");
  }

  // Every tensor name met, written or omitted.
  const std::vector<std::string>& names() const { return names_; }

 private:
  bool keep(const std::string& name) {
    names_.push_back(name);
    return !is_omitted(options_, name);
  }
  // `values` of row-major `dims` (outermost first) as `type`.
  void tensor(const std::string& name, Values values, std::vector<int64_t> dims, GgufQuant type) {
    if (!keep(name)) return;
    std::reverse(dims.begin(), dims.end());
    writer_.add_tensor(name, dims, type, [values = std::move(values), type] {
      const auto data = values();
      return gguf_quantize(type, data.data(), data.size());
    });
  }
  void matrix(const std::string& name, const std::string& logical) {
    const LogicalTensor& t = model_.at(logical);
    tensor(name, t.values, t.shape, matrices_);
  }
  // F32, rounded as the checkpoint's dtype stores it.
  void vector(const std::string& name, const std::string& logical) {
    const LogicalTensor& t = model_.at(logical);
    tensor(name, rounded(t.values), t.shape, GgufQuant::kF32);
  }
  Values rounded(Values values) const {
    return [values = std::move(values), dtype = options_.dtype] {
      auto v = values();
      for (float& x : v) x = round_to_dtype(x, dtype);
      return v;
    };
  }
  void linear(const std::string& name, const std::string& logical) {
    matrix(name + ".weight", logical + ".weight");
    vector(name + ".bias", logical + ".bias");
  }
  void layer_norm(const std::string& name, const std::string& logical) {
    vector(name + ".weight", logical + ".weight");
    vector(name + ".bias", logical + ".bias");
  }
  // The Conv3d [H, C, 2, P, P] as llama.cpp's converter splits it: slice t of the temporal
  // axis, a [H, C, P, P] Conv2d kernel, as v.patch_embd.weight (t = 0) and .weight.1 (t = 1).
  // Its type is the converter's too (MmprojModel.tensor_force_quant): F16 in an f16 file, F32
  // otherwise (a bf16 checkpoint's values, rounded to bf16, stored as F32).
  void add_patch_embedding() {
    const LogicalTensor& conv = model_.at("visual.patch_embed.proj.weight");
    const int64_t H = conv.shape[0], C = conv.shape[1], T = conv.shape[2];
    const int64_t plane = conv.shape[3] * conv.shape[4];
    for (int64_t t = 0; t < T; ++t) {
      Values slice = [values = conv.values, H, C, T, plane, t] {
        const auto all = values();
        std::vector<float> out;
        for (int64_t hc = 0; hc < H * C; ++hc)
          out.insert(out.end(), all.begin() + (hc * T + t) * plane,
                     all.begin() + (hc * T + t + 1) * plane);
        return out;
      };
      const bool f16 = options_.dtype == TensorDType::kF16;
      tensor(t == 0 ? "v.patch_embd.weight" : "v.patch_embd.weight.1", f16 ? slice : rounded(slice),
             {H, C, conv.shape[3], conv.shape[4]}, f16 ? GgufQuant::kF16 : GgufQuant::kF32);
    }
  }

  const ModelOptions& options_;
  const LogicalModel& model_;
  GgufFileWriter& writer_;
  GgufQuant matrices_;
  std::vector<std::string> names_;
};

void add_clip_metadata(const ModelOptions& options, GgufFileWriter& w) {
  const VisionShape& v = options.shape.vision_tower;
  const int side = int(std::lround(std::sqrt(double(v.num_position_embeddings))));
  w.add_string("general.architecture", "clip");
  w.add_string("general.name", std::string("qmlx random ") + arch_name(options.arch) + " mmproj");
  w.add_u32("general.alignment", 32);
  w.add_bool("clip.has_vision_encoder", true);
  w.add_string("clip.projector_type", "qwen3vl_merger");
  w.add_bool("clip.use_gelu", true);
  w.add_u32("clip.vision.image_size", uint32_t(side * v.patch));
  w.add_u32("clip.vision.patch_size", uint32_t(v.patch));
  w.add_u32("clip.vision.embedding_length", uint32_t(v.hidden));
  w.add_u32("clip.vision.feed_forward_length", uint32_t(v.intermediate));
  w.add_u32("clip.vision.projection_dim", uint32_t(options.shape.hidden));
  w.add_u32("clip.vision.block_count", uint32_t(v.depth));
  w.add_u32("clip.vision.attention.head_count", uint32_t(v.heads));
  // The converter writes the text config's rms_norm_eps here; the tower's LayerNorms use 1e-6.
  w.add_f32("clip.vision.attention.layer_norm_epsilon", float(options.shape.rms_norm_eps));
  w.add_u32("clip.vision.spatial_merge_size", uint32_t(v.merge));
  // The converter copies preprocessor_config.json's normalization (Qwen's 0.5, as
  // model_config.cpp writes it); mtmd refuses a file without these two arrays.
  w.add_f32_array("clip.vision.image_mean", {0.5f, 0.5f, 0.5f});
  w.add_f32_array("clip.vision.image_std", {0.5f, 0.5f, 0.5f});
}

}  // namespace

bool is_mmproj_tensor(const std::string& name) {
  return name.rfind("v.", 0) == 0 || name.rfind("mm.", 0) == 0;
}

void write_mmproj(const ModelOptions& options, const LogicalModel& weights, const std::string& path,
                  std::optional<GgufQuant> matrices) {
  validate_options(options);
  if (!options.shape.vision) throw Error("an mmproj file needs --vision (a tower to write)");
  GgufFileWriter w;
  add_clip_metadata(options, w);
  MmprojLayout layout(options, weights, w, matrices);
  layout.add_tensors();
  require_omitted_tensors_exist(options, layout.names());
  w.write(path);
}

void write_random_mmproj(const ModelOptions& options, const std::string& path,
                         std::optional<GgufQuant> matrices) {
  validate_options(options);
  const LogicalModel weights =
      random_logical_model(options.arch, options.shape, options.seed, Vocabulary::demo().size());
  write_mmproj(options, weights, path, matrices);
}

}  // namespace qmlx::modelgen
