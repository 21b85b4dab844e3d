// VisionWeights: every tensor of a Qwen3.5 vision tower (transformers' Qwen3_5VisionModel),
// as the encoder (vision_encoder.h) reads them. Matrices stay views in their stored format
// (the patch embedding of layouts that reorder its axes is copied once, at load); biases and
// LayerNorm parameters are converted to float. Three layouts hold a tower: Hugging Face files
// (`model.visual.*`, or `visual.*` at the top level) and mlx-vlm conversions
// (`vision_tower.*`, the patch embedding channels-last) are read by load_vision_weights;
// llama.cpp mmproj GGUF files by load_mmproj_vision (mmproj_weights.h). Each layout is a
// VisionTensorSource, and read_vision_tower is the one place that knows the tower's structure.
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

// Where a tower's tensors come from. Modules are named as in Hugging Face files
// ("blocks.3.attn.qkv", "merger.linear_fc1", "pos_embed"); each source maps the names to its
// layout's and undoes its transforms. Sources of an optional part record a missing tensor and
// return an empty stand-in (optional_parts.h), and throw qmlx::Error on a malformed one.
class VisionTensorSource {
 public:
  virtual ~VisionTensorSource() = default;
  // `module`.weight as a [rows, cols] matrix.
  virtual WeightMatrix matrix(const std::string& module, int rows, int cols) = 0;
  // A float vector of n values, by tensor name ("merger.norm.bias").
  virtual std::vector<float> vector(const std::string& tensor, int n) = 0;
  // patch_embed.proj.weight as the [hidden, channels * temporal * patch * patch] matrix
  // VisionWeights::patch_embed describes.
  virtual WeightMatrix patch_embed(const VisionConfig& c) = 0;
};

// Reads a whole tower of shape `config` from `source`.
VisionWeights read_vision_tower(VisionTensorSource& source, const VisionConfig& config);

// The tower of a Qwen3.5 checkpoint when the config describes one and the files hold it whole.
// A tower that is incomplete or malformed, whose vision_config does not parse, or whose output
// width is not the language model's, is dropped with one warning (optional_parts.h), and
// `dropped` says why. A checkpoint without tower tensors has none (text-only conversions such
// as mlx-lm's strip it), which is logged once as information.
std::optional<VisionWeights> load_vision_weights(const WeightLoader& stack, std::string& dropped);

}  // namespace qmlx
