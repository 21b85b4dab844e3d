// ModelConfig: the hyper-parameters of one checkpoint, read from its config.json. Qwen3.5
// (qwen3_5, qwen3_5_moe) nests them under text_config; Qwen3-Next and Qwen3 are flat. The MLX
// `quantization` block (global bits/group size and per-module overrides) is part of it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/vision_config.h"

namespace qmlx {

enum class Architecture { kQwen3_5, kQwen3_5Moe, kQwen3Next, kQwen3 };
const char* architecture_name(Architecture a);

struct QuantParams {
  int bits = 0;
  int group_size = 0;
};

struct QuantConfig {
  bool present = false;
  std::string mode = "affine";
  QuantParams global;
  // Module path (tensor name without ".weight") -> its parameters, or nullopt where the
  // override is `false` (left unquantized).
  std::map<std::string, std::optional<QuantParams>> overrides;
  std::map<std::string, std::string> override_modes;

  // Parameters for a module whose `.scales` tensor exists.
  QuantParams params_for(const std::string& module_path) const;
  std::string mode_for(const std::string& module_path) const;
};

struct ModelConfig {
  Architecture arch = Architecture::kQwen3;
  std::string model_type;
  int hidden_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  // Gated DeltaNet.
  int linear_key_heads = 0;
  int linear_value_heads = 0;
  int linear_key_dim = 0;
  int linear_value_dim = 0;
  int conv_kernel = 0;
  // Feed-forward.
  int intermediate_size = 0;
  int num_experts = 0;
  int experts_per_token = 0;
  int moe_intermediate_size = 0;
  int shared_expert_intermediate_size = 0;
  bool norm_topk_prob = true;
  int decoder_sparse_step = 1;
  std::vector<int> mlp_only_layers;
  // Positions and norms.
  double rope_theta = 10000.0;
  int rotary_dim = 0;
  // Qwen3.5's multimodal RoPE: how many of the rotary_dim / 2 frequencies take the temporal,
  // height and width position (rope_parameters.mrope_section; sums to rotary_dim / 2), and
  // whether they interleave (kernels/rope.h). Empty for text-only families.
  std::vector<int> mrope_section;
  bool mrope_interleaved = false;
  // The <|image_pad|> token (config.json's image_token_id), -1 without one.
  int image_token_id = -1;
  float rms_norm_eps = 1e-6f;
  int vocab_size = 0;
  bool tie_word_embeddings = false;
  std::vector<bool> full_attention;  // per layer
  QuantConfig quantization;
  // Qwen3.5's vision tower (`vision_config`); absent for the text-only families and for a
  // Qwen3.5 config without one. A vision_config that does not parse leaves it absent and says
  // why in vision_config_error: the tower is optional, the text model still loads.
  std::optional<VisionConfig> vision;
  std::string vision_config_error;

  bool is_full_attention(int layer) const { return full_attention[layer]; }
  bool is_moe_layer(int layer) const;
  // Qwen3.5 / Qwen3-Next attention has the sigmoid output gate and zero-centred norms.
  bool hybrid() const { return arch != Architecture::kQwen3; }
  int linear_key_size() const { return linear_key_heads * linear_key_dim; }        // KD
  int linear_value_size() const { return linear_value_heads * linear_value_dim; }  // VD
  int conv_channels() const { return 2 * linear_key_size() + linear_value_size(); }

  // `source` names the file in error messages.
  static ModelConfig from_json(const nlohmann::json& j, const std::string& source);
  // Reads <dir>/config.json.
  static ModelConfig load(const std::string& dir);
};

}  // namespace qmlx
