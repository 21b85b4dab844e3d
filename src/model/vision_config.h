// VisionConfig: the shape of a Qwen3.5 vision tower, read from config.json's `vision_config`
// (transformers' Qwen3_5VisionConfig, which is Qwen3VLVisionConfig without DeepStack). Keys a
// file leaves out take transformers' defaults, as its config class fills them in.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace qmlx {

struct VisionConfig {
  int depth = 27;
  int hidden_size = 1152;
  int num_heads = 16;
  int intermediate_size = 4304;
  int patch_size = 16;
  int temporal_patch_size = 2;
  int spatial_merge_size = 2;
  int in_channels = 3;
  int out_hidden_size = 3584;  // the language model's width in a real checkpoint
  int num_position_embeddings = 2304;
  // The blocks' MLP activation: true for "gelu_pytorch_tanh" (every Qwen3-VL / Qwen3.5 tower),
  // false for "gelu" (the exact erf form). The merger always uses the exact form.
  bool mlp_gelu_tanh = true;
  // Fixed by the model code, not the config: nn.LayerNorm(eps=1e-6), rotary theta 10000.
  float layer_norm_eps = 1e-6f;
  double rope_theta = 10000.0;

  int head_dim() const { return hidden_size / num_heads; }
  // Floats in one pixel_values row: channels x temporal copies x patch rows x patch columns.
  int patch_dim() const { return in_channels * temporal_patch_size * patch_size * patch_size; }
  // Patches the merger joins into one output token.
  int merge_unit() const { return spatial_merge_size * spatial_merge_size; }
  // The learned position grid is side x side.
  int grid_side() const;

  // Throws qmlx::Error naming `source` and the field on a wrong type or an inconsistent shape
  // (heads not dividing the width, a head dim not a multiple of 4, a grid that is not square,
  // an activation other than the two GELUs).
  static VisionConfig from_json(const nlohmann::json& v, const std::string& source);
};

}  // namespace qmlx
