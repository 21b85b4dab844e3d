#include "modelgen/weight_layout.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "base/error.h"
#include "modelgen/affine_quantizer.h"

namespace qmlx::modelgen {

namespace {

using Values = std::function<std::vector<float>()>;

// One float tensor of the checkpoint before it is encoded (cast or quantized).
struct PhysicalTensor {
  std::string name;  // without prefix
  std::vector<int64_t> shape;
  Values values;
  bool quantizable = false;  // a Linear / Embedding weight in MLX terms
  bool keep_f32 = false;     // A_log: real checkpoints keep it float32
};

Values concatenated(std::vector<Values> parts) {
  return [parts = std::move(parts)] {
    std::vector<float> out;
    for (const auto& part : parts) {
      const auto values = part();
      out.insert(out.end(), values.begin(), values.end());
    }
    return out;
  };
}

Values shifted(Values values, float delta) {
  return [values = std::move(values), delta] {
    auto out = values();
    for (float& v : out) v += delta;
    return out;
  };
}

// A convolution weight [out, in, k...] as MLX stores it, channels last: [out, k..., in].
std::vector<int64_t> channels_last_shape(std::vector<int64_t> shape) {
  std::rotate(shape.begin() + 1, shape.begin() + 2, shape.end());
  return shape;
}
Values channels_last(const LogicalTensor& conv) {
  return [values = conv.values, shape = conv.shape] {
    const auto in = values();
    const int64_t out_channels = shape[0], channels = shape[1];
    const int64_t kernel = int64_t(in.size()) / (out_channels * channels);
    std::vector<float> out(in.size());
    for (int64_t o = 0; o < out_channels; ++o)
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t k = 0; k < kernel; ++k)
          out[(o * kernel + k) * channels + c] = in[(o * channels + c) * kernel + k];
    return out;
  };
}

// Appends rows [row_begin, row_begin + row_count) of a row-major matrix with `cols` columns.
void append_rows(const std::vector<float>& matrix, int64_t cols, int64_t row_begin,
                 int64_t row_count, std::vector<float>& out) {
  out.insert(out.end(), matrix.begin() + row_begin * cols,
             matrix.begin() + (row_begin + row_count) * cols);
}

class Layouter {
 public:
  Layouter(const LogicalModel& model, const ModelOptions& options)
      : model_(model), options_(options), s_(options.shape) {}

  std::vector<PhysicalTensor> physical_tensors() {
    plain("embed_tokens.weight", true);
    zero_centred_norm("norm.weight");
    if (!s_.tie) plain("lm_head.weight", true);
    for (int layer = 0; layer < s_.layers; ++layer)
      add_layer(layer_name(layer, ""), s_.is_full_attention(options_.arch, layer));
    if (s_.mtp) {
      plain("mtp.fc.weight", true);
      for (const char* n : {"pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"})
        zero_centred_norm(std::string("mtp.") + n + ".weight");
      add_layer("mtp.layers.0.", true);
    }
    if (s_.vision) {
      // Stored as built: Linear weights and biases, plain LayerNorms, the Conv3d in PyTorch's
      // layout in HF files and channels-last in MLX ones (mlx-vlm's sanitize transposes it
      // for MLX's Conv3d). Never quantized: mlx-vlm skips `vision_tower` modules.
      for (const auto& [name, tensor] : model_.tensors()) {
        if (name.rfind("visual.", 0) != 0) continue;
        if (name == "visual.patch_embed.proj.weight" && options_.layout == Layout::kMLX) {
          emit(name, channels_last_shape(tensor.shape), channels_last(tensor), false);
        } else {
          emit(name, tensor.shape, tensor.values, false);
        }
      }
    }
    return std::move(out_);
  }

  std::string prefixed(const std::string& name) const {
    const bool hf = options_.layout == Layout::kHF;
    if (name == "lm_head.weight") {
      return is_qwen35_family(options_.arch) && !hf ? "language_model.lm_head.weight" : name;
    }
    // The MTP head sits at the top level in HF files (vLLM's Qwen3.5 / Qwen3-Next MTP loaders
    // read `mtp.*`); MLX files put it where mlx-lm's sanitize moves Qwen3.5's top-level names.
    if (name.rfind("mtp.", 0) == 0)
      return is_qwen35_family(options_.arch) && !hf ? "language_model." + name : name;
    // The vision tower: `model.visual.*` in HF files, `vision_tower.*` in mlx-vlm's.
    if (name.rfind("visual.", 0) == 0)
      return hf ? "model." + name : "vision_tower." + name.substr(std::string("visual.").size());
    if (!is_qwen35_family(options_.arch)) return "model." + name;
    return (hf ? "model.language_model." : "language_model.model.") + name;
  }

 private:
  const LogicalTensor& logical(const std::string& name) const { return model_.at(name); }

  void emit(std::string name, std::vector<int64_t> shape, Values values, bool quantizable) {
    out_.push_back({std::move(name), std::move(shape), std::move(values), quantizable, false});
  }
  void plain(const std::string& name, bool quantizable) {
    const auto& t = logical(name);
    emit(name, t.shape, t.values, quantizable);
  }
  void zero_centred_norm(const std::string& name) {
    const auto& t = logical(name);
    const bool store_raw = has_zero_centred_norms(options_.arch) && options_.layout == Layout::kHF;
    emit(name, t.shape, store_raw ? shifted(t.values, -1.0f) : t.values, false);
  }

  // `prefix` names the layer: "layers.3." or "mtp.layers.0.".
  void add_layer(const std::string& prefix, bool full_attention) {
    zero_centred_norm(prefix + "input_layernorm.weight");
    zero_centred_norm(prefix + "post_attention_layernorm.weight");
    if (full_attention) {
      for (const char* p : {"q_proj", "k_proj", "v_proj", "o_proj"}) {
        plain(prefix + "self_attn." + p + ".weight", true);
      }
      zero_centred_norm(prefix + "self_attn.q_norm.weight");
      zero_centred_norm(prefix + "self_attn.k_norm.weight");
    } else {
      add_gated_delta_net(prefix);
    }
    if (has_moe(options_.arch)) {
      add_moe(prefix);
    } else {
      for (const char* p : {"gate_proj", "up_proj", "down_proj"}) {
        plain(prefix + "mlp." + p + ".weight", true);
      }
    }
  }

  void add_gated_delta_net(const std::string& prefix) {
    const auto L = [&prefix](const std::string& suffix) {
      return prefix + "linear_attn." + suffix;
    };
    if (options_.arch == Arch::kQwen3Next) {
      add_interleaved_projections(prefix);
    } else {
      for (const char* p : {"in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a"}) {
        plain(L(std::string(p) + ".weight"), true);
      }
    }
    const auto& conv = logical(L("conv1d.weight"));
    const bool hf = options_.layout == Layout::kHF;
    const int64_t channels = conv.shape[0], kernel = conv.shape[1];
    emit(L("conv1d.weight"),
         hf ? std::vector<int64_t>{channels, 1, kernel} : std::vector<int64_t>{channels, kernel, 1},
         conv.values, false);
    const auto& a_log = logical(L("A_log"));
    out_.push_back({L("A_log"), a_log.shape, a_log.values, false, true});
    plain(L("dt_bias"), false);
    plain(L("norm.weight"), false);
    plain(L("out_proj.weight"), true);
  }

  // Qwen3-Next: rows grouped per key head g: [q_g | k_g | v_g (r heads) | z_g (r heads)] and
  // [b_g (r) | a_g (r)] (model-spec §3.4).
  void add_interleaved_projections(const std::string& prefix) {
    const auto L = [&prefix](const std::string& suffix) {
      return prefix + "linear_attn." + suffix;
    };
    const int64_t Hk = s_.linear_key_heads, Dk = s_.linear_key_dim, Dv = s_.linear_value_dim;
    const int64_t r = s_.linear_value_heads / Hk, H = s_.hidden, key_dim = Hk * Dk;
    const Values qkv = logical(L("in_proj_qkv.weight")).values;
    const Values z = logical(L("in_proj_z.weight")).values;
    const Values b = logical(L("in_proj_b.weight")).values;
    const Values a = logical(L("in_proj_a.weight")).values;
    emit(
        L("in_proj_qkvz.weight"), {2 * key_dim + 2 * s_.linear_value_heads * Dv, H},
        [=] {
          const auto qkv_rows = qkv(), z_rows = z();
          std::vector<float> out;
          for (int64_t g = 0; g < Hk; ++g) {
            append_rows(qkv_rows, H, g * Dk, Dk, out);
            append_rows(qkv_rows, H, key_dim + g * Dk, Dk, out);
            append_rows(qkv_rows, H, 2 * key_dim + g * r * Dv, r * Dv, out);
            append_rows(z_rows, H, g * r * Dv, r * Dv, out);
          }
          return out;
        },
        true);
    emit(
        L("in_proj_ba.weight"), {2 * s_.linear_value_heads, H},
        [=] {
          const auto b_rows = b(), a_rows = a();
          std::vector<float> out;
          for (int64_t g = 0; g < Hk; ++g) {
            append_rows(b_rows, H, g * r, r, out);
            append_rows(a_rows, H, g * r, r, out);
          }
          return out;
        },
        true);
  }

  void add_moe(const std::string& prefix) {
    const auto L = [&prefix](const std::string& suffix) { return prefix + suffix; };
    plain(L("mlp.gate.weight"), true);
    for (const char* p : {"gate_proj", "up_proj", "down_proj"}) {
      plain(L(std::string("mlp.shared_expert.") + p + ".weight"), true);
    }
    plain(L("mlp.shared_expert_gate.weight"), true);
    const auto expert = [&](int e, const char* proj) {
      return logical(L("mlp.experts." + std::to_string(e) + "." + proj + ".weight")).values;
    };
    const int64_t E = s_.experts, I = s_.moe_intermediate, H = s_.hidden;
    if (options_.layout == Layout::kMLX) {
      for (const char* p : {"gate_proj", "up_proj", "down_proj"}) {
        std::vector<Values> parts;
        for (int e = 0; e < E; ++e) parts.push_back(expert(e, p));
        const bool down = std::string(p) == "down_proj";
        emit(L(std::string("mlp.switch_mlp.") + p + ".weight"),
             down ? std::vector<int64_t>{E, H, I} : std::vector<int64_t>{E, I, H},
             concatenated(std::move(parts)), true);
      }
    } else if (options_.arch == Arch::kQwen35Moe) {
      std::vector<Values> gate_up, down;
      for (int e = 0; e < E; ++e) {
        gate_up.push_back(expert(e, "gate_proj"));
        gate_up.push_back(expert(e, "up_proj"));
        down.push_back(expert(e, "down_proj"));
      }
      emit(L("mlp.experts.gate_up_proj"), {E, 2 * I, H}, concatenated(std::move(gate_up)), false);
      emit(L("mlp.experts.down_proj"), {E, H, I}, concatenated(std::move(down)), false);
    } else {
      for (int e = 0; e < E; ++e) {
        for (const char* p : {"gate_proj", "up_proj", "down_proj"}) {
          plain(L("mlp.experts." + std::to_string(e) + "." + p + ".weight"), false);
        }
      }
    }
  }

  const LogicalModel& model_;
  const ModelOptions& options_;
  const ModelShape& s_;
  std::vector<PhysicalTensor> out_;
};

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// mlx-lm quantizes the MoE router and shared-expert gate at 8 bits, group 64.
std::optional<QuantParams> quantization_for(const PhysicalTensor& tensor,
                                            const std::optional<QuantParams>& global) {
  if (!global || !tensor.quantizable) return std::nullopt;
  QuantParams params = *global;
  if (ends_with(tensor.name, "mlp.gate.weight") ||
      ends_with(tensor.name, "mlp.shared_expert_gate.weight")) {
    params = {8, 64};
  }
  if (tensor.shape.back() % params.group_size != 0) return std::nullopt;
  return params;
}

TensorEntry float_entry(std::string name, const PhysicalTensor& tensor, TensorDType dtype) {
  TensorEntry entry{std::move(name), dtype, tensor.shape, nullptr};
  entry.fill = [values = tensor.values, dtype](std::span<uint8_t> out) {
    const auto data = values();
    const size_t width = dtype_bytes(dtype);
    for (size_t i = 0; i < data.size(); ++i) store_float(data[i], dtype, out.data() + i * width);
  };
  return entry;
}

// The three entries of an MLX quantized module share one quantization, computed when the
// first of them is written and dropped after the last.
struct SharedQuantization {
  Values values;
  int64_t rows;
  int64_t cols;
  QuantParams params;
  TensorDType scale_dtype;
  std::optional<QuantizedMatrix> matrix;
  int uses_left = 3;

  const QuantizedMatrix& get() {
    if (!matrix) matrix = quantize_affine(values(), rows, cols, params, scale_dtype);
    return *matrix;
  }
  void release() {
    if (--uses_left == 0) matrix.reset();
  }
};

void append_quantized_entries(const std::string& path, const PhysicalTensor& tensor,
                              QuantParams params, TensorDType scale_dtype,
                              std::vector<TensorEntry>& out) {
  const int64_t cols = tensor.shape.back();
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < tensor.shape.size(); ++i) rows *= tensor.shape[i];
  auto shared = std::make_shared<SharedQuantization>(
      SharedQuantization{tensor.values, rows, cols, params, scale_dtype, std::nullopt, 3});
  auto shape_with_last = [&](int64_t last) {
    auto shape = tensor.shape;
    shape.back() = last;
    return shape;
  };
  TensorEntry weight{path + ".weight", TensorDType::kU32,
                     shape_with_last(packed_words_per_row(cols, params.bits)), nullptr};
  weight.fill = [shared](std::span<uint8_t> bytes) {
    const auto& packed = shared->get().packed;
    std::memcpy(bytes.data(), packed.data(), packed.size() * sizeof(uint32_t));
    shared->release();
  };
  out.push_back(std::move(weight));
  for (const bool scales : {true, false}) {
    TensorEntry entry{path + (scales ? ".scales" : ".biases"), scale_dtype,
                      shape_with_last(cols / params.group_size), nullptr};
    entry.fill = [shared, scales, scale_dtype](std::span<uint8_t> bytes) {
      const auto& m = shared->get();
      const auto& data = scales ? m.scales : m.biases;
      const size_t width = dtype_bytes(scale_dtype);
      for (size_t i = 0; i < data.size(); ++i) {
        store_float(data[i], scale_dtype, bytes.data() + i * width);
      }
      shared->release();
    };
    out.push_back(std::move(entry));
  }
}

std::string module_path(const std::string& weight_name) {
  return weight_name.substr(0, weight_name.size() - std::string(".weight").size());
}

}  // namespace

LaidOutWeights lay_out_weights(const LogicalModel& model, const ModelOptions& options) {
  Layouter layouter(model, options);
  LaidOutWeights result;
  if (options.quantization) {
    result.quantization = {{"group_size", options.quantization->group_size},
                           {"bits", options.quantization->bits},
                           {"mode", "affine"}};
  }
  for (const auto& tensor : layouter.physical_tensors()) {
    const std::string name = layouter.prefixed(tensor.name);
    const auto params = quantization_for(tensor, options.quantization);
    if (!params) {
      const TensorDType dtype = tensor.keep_f32 ? TensorDType::kF32 : options.dtype;
      result.tensors.push_back(float_entry(name, tensor, dtype));
      continue;
    }
    const std::string path = module_path(name);
    append_quantized_entries(path, tensor, *params, options.dtype, result.tensors);
    const QuantParams& global = *options.quantization;
    if (params->bits != global.bits || params->group_size != global.group_size) {
      result.quantization[path] = {{"group_size", params->group_size}, {"bits", params->bits}};
    }
  }
  return result;
}

}  // namespace qmlx::modelgen
