#include "model/config.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace qmlx {
namespace {

using nlohmann::json;

class Fields {
 public:
  Fields(const json& text, const json& top, std::string source)
      : text_(text), top_(top), source_(std::move(source)) {}

  const json* find(const std::string& key) const {
    if (text_.contains(key) && !text_[key].is_null()) return &text_[key];
    if (top_.contains(key) && !top_[key].is_null()) return &top_[key];
    return nullptr;
  }
  template <typename T>
  T get(const std::string& key, T fallback) const {
    const json* v = find(key);
    return v ? as<T>(*v, key) : fallback;
  }
  template <typename T>
  T require(const std::string& key) const {
    const json* v = find(key);
    if (!v) throw Error(source_ + ": missing field '" + key + "'");
    return as<T>(*v, key);
  }
  const std::string& source() const { return source_; }

 private:
  template <typename T>
  T as(const json& v, const std::string& key) const {
    try {
      return v.get<T>();
    } catch (const json::exception&) {
      throw Error(source_ + ": field '" + key + "' has the wrong type");
    }
  }
  const json& text_;
  const json& top_;
  std::string source_;
};

Architecture parse_architecture(const std::string& type, const std::string& source) {
  if (type == "qwen3_5" || type == "qwen3_5_text") return Architecture::kQwen3_5;
  if (type == "qwen3_5_moe" || type == "qwen3_5_moe_text") return Architecture::kQwen3_5Moe;
  if (type == "qwen3_next") return Architecture::kQwen3Next;
  if (type == "qwen3") return Architecture::kQwen3;
  throw Error(source + ": unknown architecture model_type '" + type +
              "' (supported: qwen3_5, qwen3_5_moe, qwen3_next, qwen3)");
}

std::vector<bool> parse_layer_types(const Fields& f, int layers, bool hybrid) {
  std::vector<bool> full(layers, true);
  if (!hybrid) return full;
  if (const json* types = f.find("layer_types")) {
    if (!types->is_array() || int(types->size()) != layers)
      throw Error(f.source() + ": layer_types must list num_hidden_layers entries");
    for (int i = 0; i < layers; ++i) {
      std::string t = (*types)[i].is_string() ? (*types)[i].get<std::string>() : "";
      if (t != "full_attention" && t != "linear_attention")
        throw Error(f.source() + ": layer_types[" + std::to_string(i) + "] is '" + t + "'");
      full[i] = t == "full_attention";
    }
    return full;
  }
  int interval = f.get<int>("full_attention_interval", 4);
  if (interval <= 0) throw Error(f.source() + ": full_attention_interval must be positive");
  for (int i = 0; i < layers; ++i) full[i] = (i + 1) % interval == 0;
  return full;
}

std::optional<QuantParams> parse_override(const json& v, const QuantParams& global) {
  if (v.is_boolean()) return v.get<bool>() ? std::optional(global) : std::nullopt;
  QuantParams p = global;
  p.bits = v.value("bits", global.bits);
  p.group_size = v.value("group_size", global.group_size);
  return p;
}

QuantConfig parse_quantization(const json& top, const std::string& source) {
  QuantConfig q;
  const json* block = nullptr;
  if (top.contains("quantization"))
    block = &top["quantization"];
  else if (top.contains("quantization_config"))
    block = &top["quantization_config"];
  if (!block || !block->is_object()) return q;
  q.present = true;
  q.global.bits = block->value("bits", 4);
  q.global.group_size = block->value("group_size", 64);
  q.mode = block->value("mode", std::string("affine"));
  for (auto it = block->begin(); it != block->end(); ++it) {
    if (it.value().is_object()) {
      q.overrides[it.key()] = parse_override(it.value(), q.global);
      if (it.value().contains("mode"))
        q.override_modes[it.key()] = it.value()["mode"].get<std::string>();
    } else if (it.value().is_boolean()) {
      q.overrides[it.key()] = parse_override(it.value(), q.global);
    }
  }
  return q;
}

double rope_theta_of(const Fields& f, const json* rope_params) {
  if (rope_params && rope_params->contains("rope_theta"))
    return (*rope_params)["rope_theta"].get<double>();
  return f.get<double>("rope_theta", 10000.0);
}

double partial_rotary_of(const Fields& f, const json* rope_params, double fallback) {
  if (rope_params && rope_params->contains("partial_rotary_factor"))
    return (*rope_params)["partial_rotary_factor"].get<double>();
  return f.get<double>("partial_rotary_factor", fallback);
}

}  // namespace

const char* architecture_name(Architecture a) {
  switch (a) {
    case Architecture::kQwen3_5:
      return "qwen3_5";
    case Architecture::kQwen3_5Moe:
      return "qwen3_5_moe";
    case Architecture::kQwen3Next:
      return "qwen3_next";
    case Architecture::kQwen3:
      return "qwen3";
  }
  return "?";
}

QuantParams QuantConfig::params_for(const std::string& module_path) const {
  auto it = overrides.find(module_path);
  if (it != overrides.end() && it->second) return *it->second;
  return global;
}

std::string QuantConfig::mode_for(const std::string& module_path) const {
  auto it = override_modes.find(module_path);
  return it != override_modes.end() ? it->second : mode;
}

bool ModelConfig::is_moe_layer(int layer) const {
  if (num_experts <= 0) return false;
  if (arch == Architecture::kQwen3_5Moe) return true;
  for (int l : mlp_only_layers)
    if (l == layer) return false;
  return (layer + 1) % std::max(1, decoder_sparse_step) == 0;
}

// rope_parameters' mrope_section and mrope_interleaved (Qwen3.5: [11, 11, 10], interleaved).
// Contiguous sections must cover the rotary_dim / 2 frequencies exactly (transformers splits
// the frequencies by them); interleaved ones need not, as transformers' apply_interleaved_mrope
// only slices up to 3 * section, so a small model keeps Qwen3.5's numbers.
static void parse_mrope(const json* rope_params, const std::string& source, ModelConfig& c) {
  if (!rope_params || !rope_params->is_object() || !rope_params->contains("mrope_section")) return;
  const json& sections = (*rope_params)["mrope_section"];
  const auto interleaved = rope_params->find("mrope_interleaved");
  c.mrope_interleaved =
      interleaved != rope_params->end() && interleaved->is_boolean() && interleaved->get<bool>();
  int sum = 0;
  if (sections.is_array() && sections.size() == 3) {
    for (const json& s : sections) {
      if (!s.is_number_integer() || s.get<int>() < 0) break;
      c.mrope_section.push_back(s.get<int>());
      sum += c.mrope_section.back();
    }
  }
  if (c.mrope_section.size() != 3)
    throw Error(source + ": mrope_section must be three non-negative counts");
  if (!c.mrope_interleaved && sum != c.rotary_dim / 2)
    throw Error(source + ": mrope_section must sum to the rotary dimension / 2 (" +
                std::to_string(c.rotary_dim / 2) + ")");
}

ModelConfig ModelConfig::from_json(const json& top, const std::string& source) {
  if (!top.is_object()) throw Error(source + ": not a JSON object");
  const json empty = json::object();
  const json& text =
      top.contains("text_config") && top["text_config"].is_object() ? top["text_config"] : empty;
  Fields f(text, top, source);
  ModelConfig c;
  c.model_type = top.value("model_type", text.value("model_type", std::string()));
  c.arch = parse_architecture(c.model_type, source);
  c.hidden_size = f.require<int>("hidden_size");
  c.num_layers = f.require<int>("num_hidden_layers");
  c.num_heads = f.require<int>("num_attention_heads");
  c.num_kv_heads = f.get<int>("num_key_value_heads", c.num_heads);
  c.head_dim = f.get<int>("head_dim", c.hidden_size / std::max(1, c.num_heads));
  c.vocab_size = f.require<int>("vocab_size");
  c.rms_norm_eps = f.get<float>("rms_norm_eps", 1e-6f);
  c.intermediate_size = f.get<int>("intermediate_size", 0);
  // Qwen3.5's own model class reads tie_word_embeddings from the top level, so that wins over a
  // copy in text_config.
  c.tie_word_embeddings =
      top.contains("tie_word_embeddings") && top["tie_word_embeddings"].is_boolean()
          ? top["tie_word_embeddings"].get<bool>()
          : f.get<bool>("tie_word_embeddings", false);
  const json* rope_params = f.find("rope_parameters");
  if (!rope_params) rope_params = f.find("rope_scaling");
  c.rope_theta = rope_theta_of(f, rope_params);
  double partial = partial_rotary_of(f, rope_params, c.hybrid() ? 0.25 : 1.0);
  c.rotary_dim = int(c.head_dim * partial);
  parse_mrope(rope_params, source, c);
  if (top.contains("image_token_id") && top["image_token_id"].is_number_integer())
    c.image_token_id = top["image_token_id"].get<int>();
  if (c.hybrid()) {
    c.linear_key_heads = f.require<int>("linear_num_key_heads");
    c.linear_value_heads = f.require<int>("linear_num_value_heads");
    c.linear_key_dim = f.require<int>("linear_key_head_dim");
    c.linear_value_dim = f.require<int>("linear_value_head_dim");
    c.conv_kernel = f.get<int>("linear_conv_kernel_dim", 4);
  }
  if (c.arch == Architecture::kQwen3_5Moe || c.arch == Architecture::kQwen3Next) {
    c.num_experts = f.get<int>("num_experts", 0);
    c.experts_per_token = f.get<int>("num_experts_per_tok", 0);
    c.moe_intermediate_size = f.get<int>("moe_intermediate_size", 0);
    c.shared_expert_intermediate_size = f.get<int>("shared_expert_intermediate_size", 0);
    c.decoder_sparse_step = f.get<int>("decoder_sparse_step", 1);
    c.mlp_only_layers = f.get<std::vector<int>>("mlp_only_layers", {});
    // Qwen3.5-MoE always renormalises the top-k weights; Qwen3-Next follows its flag.
    c.norm_topk_prob = c.arch == Architecture::kQwen3_5Moe || f.get<bool>("norm_topk_prob", true);
  }
  c.full_attention = parse_layer_types(f, c.num_layers, c.hybrid());
  c.quantization = parse_quantization(top, source);
  const bool multimodal = c.arch == Architecture::kQwen3_5 || c.arch == Architecture::kQwen3_5Moe;
  if (multimodal && top.contains("vision_config")) {
    try {
      c.vision = VisionConfig::from_json(top["vision_config"], source);
    } catch (const Error& e) {
      c.vision_config_error = e.what();
    }
  }

  auto positive = [&](int v, const char* name) {
    if (v <= 0) throw Error(source + ": field '" + name + "' must be positive");
  };
  positive(c.hidden_size, "hidden_size");
  positive(c.num_layers, "num_hidden_layers");
  positive(c.num_heads, "num_attention_heads");
  positive(c.num_kv_heads, "num_key_value_heads");
  positive(c.vocab_size, "vocab_size");
  if (c.num_heads % c.num_kv_heads != 0)
    throw Error(source + ": num_attention_heads must be a multiple of num_key_value_heads");
  if (c.rotary_dim % 2 != 0 || c.rotary_dim > c.head_dim)
    throw Error(source + ": rotary dimension must be even and at most head_dim");
  if (c.hybrid() && c.linear_value_heads % c.linear_key_heads != 0)
    throw Error(source + ": linear_num_value_heads must be a multiple of linear_num_key_heads");
  if (c.num_experts > 0 && (c.experts_per_token <= 0 || c.experts_per_token > c.num_experts))
    throw Error(source + ": num_experts_per_tok must be in [1, num_experts]");
  return c;
}

ModelConfig ModelConfig::load(const std::string& dir) {
  std::string path = dir + "/config.json";
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open (missing file?)");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw Error(path + ": invalid JSON: " + e.what());
  }
  return from_json(j, path);
}

}  // namespace qmlx
