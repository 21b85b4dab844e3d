// VisionWeights: every tensor of a Qwen3.5 vision tower (transformers' Qwen3_5VisionModel),
// as the encoder (vision_encoder.h) reads them. Matrices stay views in their stored format;
// biases and LayerNorm parameters are converted to float. Loaded from Hugging Face files
// (`model.visual.*`, or `visual.*` at the top level) by load_vision_weights; mlx-vlm
// conversions (`vision_tower.*`, MLX's channels-last convolution layout) and llama.cpp mmproj
// GGUF files are not read yet.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernels/weight_matrix.h"
#include "model/vision_config.h"

namespace qmlx {

class WeightLoader;

// nn.Linear with a bias: y = W x + b.
struct BiasedLinear {
  WeightMatrix weight;      // [out, in]
  std::vector<float> bias;  // [out]
};

// nn.LayerNorm: y = (x - mean) / sqrt(var + eps) * weight + bias.
struct LayerNormWeights {
  std::vector<float> weight, bias;
};

struct VisionBlockWeights {
  LayerNormWeights norm1, norm2;
  BiasedLinear qkv;   // [3 * hidden, hidden]: rows are all q heads, then all k, then all v
  BiasedLinear proj;  // [hidden, hidden]
  BiasedLinear fc1;   // mlp.linear_fc1 [intermediate, hidden]
  BiasedLinear fc2;   // mlp.linear_fc2 [hidden, intermediate]
};

struct VisionWeights {
  VisionConfig config;
  // patch_embed.proj: a Conv3d [hidden, channels, temporal, patch, patch] whose stride equals
  // its kernel, so each patch meets the kernel once and the convolution is a matmul: the
  // weight, row-major, is a [hidden, channels * temporal * patch * patch] matrix whose columns
  // run in the order of a pixel_values row (channel, temporal copy, patch row, patch column).
  BiasedLinear patch_embed;
  WeightMatrix pos_embed;  // nn.Embedding [side * side, hidden]: the learned position grid
  std::vector<VisionBlockWeights> blocks;
  LayerNormWeights merger_norm;  // over each patch's hidden, before 2x2 patches are joined
  BiasedLinear merger_fc1;       // [4 * hidden, 4 * hidden]
  BiasedLinear merger_fc2;       // [out_hidden, 4 * hidden]
};

// The tower of a Qwen3.5 checkpoint when the config describes one and the files hold it whole.
// A tower that is incomplete or malformed, whose vision_config does not parse, or whose output
// width is not the language model's, is dropped with one warning (optional_parts.h), and
// `dropped` says why. A checkpoint without tower tensors has none (text-only conversions such
// as mlx-lm's strip it), which is logged once as information.
std::optional<VisionWeights> load_vision_weights(const WeightLoader& stack, std::string& dropped);

}  // namespace qmlx
