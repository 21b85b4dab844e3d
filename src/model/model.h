// Model: one loaded checkpoint (config, memory-mapped tensors, canonical weight views) and its
// forward pass. Loaded once and shared: forward() only reads the model, so any number of
// sequences (each with its own ModelState) may use it, one call per state at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "model/config.h"
#include "model/layers.h"
#include "model/model_state.h"
#include "model/safetensors.h"
#include "model/weights.h"

namespace qmlx {

class GgufFile;

// Told how far Model::load has got reading the weights in: bytes read of the total. It is
// called with 0 first, never with less than before, and last with the total.
using LoadProgress = std::function<void(uint64_t bytes_done, uint64_t bytes_total)>;

struct ForwardOptions {
  DeltaRuleForm delta_rule = DeltaRuleForm::kAuto;
};

class Model {
 public:
  // Reads <dir>/config.json and the safetensors files, or one llama.cpp-style .gguf file when
  // `dir` ends in ".gguf"; throws qmlx::Error naming the file and tensor on anything wrong.
  // The tensors are then read into memory (the page cache behind the mapping), so loading,
  // not the first request, pays for the disk; `progress` hears about that part, which is
  // nearly all of the time on a real model.
  static std::shared_ptr<const Model> load(const std::string& dir,
                                           const LoadProgress& progress = {});

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const std::string& directory() const { return directory_; }

  // An empty state (position 0) with K/V rows stored as kv_type.
  ModelState new_state(KvType kv_type) const;

  // Feeds tokens at positions [state.position, state.position + T): appends their K/V rows,
  // advances the recurrent state and the position, and writes the logits after the last token
  // (vocab_size floats). Token ids outside the vocabulary throw qmlx::Error.
  void forward(std::span<const int32_t> tokens, ModelState& state, float* last_logits,
               const ForwardOptions& options = {}) const;

 private:
  Model() = default;
  void embed(std::span<const int32_t> tokens, float* out) const;

  std::string directory_;
  ModelConfig config_;
  std::unique_ptr<TensorStore> store_;
  std::shared_ptr<const GgufFile> gguf_;  // the mapping GGUF weights point into
  ModelWeights weights_;
};

}  // namespace qmlx
