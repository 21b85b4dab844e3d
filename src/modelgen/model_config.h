// config.json and generation_config.json exactly as the real checkpoints spell them:
// Qwen3.5 nests the text hyper-parameters under `text_config` next to a vision stub,
// Qwen3-Next and Qwen3 are flat. The MLX quantization block goes at the top level under
// both `quantization` and `quantization_config`, as mlx-lm writes it.
#pragma once

#include <nlohmann/json.hpp>

#include "modelgen/model_options.h"

namespace qmlx::modelgen {

// The ids of the tokenizer's special tokens that config files refer to.
struct SpecialIds {
  int endoftext = 0;
  int im_end = 0;
  int vision_start = 0;
  int vision_end = 0;
  int image_pad = 0;
  int video_pad = 0;
};

nlohmann::json model_config_json(const ModelOptions& options, const SpecialIds& ids,
                                 const nlohmann::json& quantization);
nlohmann::json generation_config_json(const SpecialIds& ids);
// preprocessor_config.json of a model with a vision tower: Qwen3.5's image processor settings
// (the tower's patch geometry, mean and std 0.5, pixel bounds).
nlohmann::json preprocessor_config_json(const ModelOptions& options);

}  // namespace qmlx::modelgen
