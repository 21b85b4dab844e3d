// LogicalModel: a model's weights in one canonical form, independent of how a checkpoint
// lays them out on disk. Names are the Hugging Face names without prefix ("embed_tokens.weight",
// "layers.3.linear_attn.in_proj_qkv.weight", "layers.0.mlp.experts.5.up_proj.weight", and for
// the MTP head "mtp.fc.weight", "mtp.layers.0.self_attn.q_proj.weight"); every
// Gated DeltaNet uses the Qwen3.5 split (in_proj_qkv / z / b / a), conv1d is [CD, K], experts
// are per-expert, and norm tensors hold the multiplier actually applied (1 + w for
// zero-centred norms). weight_layout.h turns this into the HF or MLX files.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace qmlx::modelgen {

struct LogicalTensor {
  std::vector<int64_t> shape;
  // Produces the row-major values; may be called more than once, must be deterministic.
  std::function<std::vector<float>()> values;

  int64_t element_count() const;
};

class LogicalModel {
 public:
  void add(const std::string& name, std::vector<int64_t> shape,
           std::function<std::vector<float>()> values);
  // Throws qmlx::Error if `name` was never added (a generator bug).
  const LogicalTensor& at(const std::string& name) const;
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  const std::map<std::string, LogicalTensor>& tensors() const { return tensors_; }

 private:
  std::map<std::string, LogicalTensor> tensors_;
};

// "layers.<layer>.<suffix>" (with an empty suffix, the layer's prefix "layers.<layer>.")
std::string layer_name(int layer, const std::string& suffix);

}  // namespace qmlx::modelgen
