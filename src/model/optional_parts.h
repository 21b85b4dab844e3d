// The optional parts of a checkpoint: tensor groups a text-only engine can run without. The
// MTP head is loaded when it is whole (multi-token prediction needs it, plain decoding does
// not), and so is the vision tower (images need it, text does not). Converters and fine-tunes
// sometimes leave a part half there (some `mtp.*` tensors but not all), so an optional part that is
// incomplete or malformed is dropped with one warning instead of failing the load; only the core
// model's tensors are required. This is the one list of those groups: the unused-tensor check and
// the loaders both read it.
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace qmlx {

struct OptionalPart {
  const char* name;                // "MTP head", for messages
  std::vector<const char*> roots;  // safetensors name prefixes, tried in this order
  const char* without;             // what the model does without it, for the warning
};

// The MTP head: `mtp.` (Hugging Face, vLLM), `language_model.mtp.` (MLX Qwen3.5 files that keep
// it), `model.mtp.` (as llama.cpp's converter accepts). In GGUF files it is the block after the
// main stack (gguf_mtp_block).
const OptionalPart& mtp_head_part();
// The vision tower of the multimodal Qwen3.5 checkpoints: `model.visual.` (Hugging Face),
// `visual.` (older exports), `vision_tower.` / `model.vision_tower.` (mlx-vlm).
const OptionalPart& vision_tower_part();

// The optional part a safetensors tensor belongs to, or null for a core tensor.
const OptionalPart* optional_part_of(std::string_view tensor);

// llama.cpp's converter appends the MTP head as one more block, "blk.<num_layers>.": its
// ordinary layer tensors plus nextn.*; {arch}.block_count counts it and
// {arch}.nextn_predict_layers says it is there.
std::string gguf_mtp_block(int num_layers);

// The tensors an optional part's loader looked for and did not find. A loader given one
// records a missing tensor here and goes on (with an empty stand-in), so a single pass names
// everything the part lacks.
class MissingTensors {
 public:
  // Once per name (a stacked tensor is looked for once per expert).
  void add(std::string name) {
    if (std::find(names_.begin(), names_.end(), name) == names_.end())
      names_.push_back(std::move(name));
  }
  bool empty() const { return names_.empty(); }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
};

// Runs `load` for `part`. Returns "" when it loaded whole. Otherwise (a tensor missing, or
// qmlx::Error from a malformed one) logs one warning naming the part and what is wrong with it
// and returns that reason, e.g. "incomplete (missing mtp.norm.weight)"; the caller then drops
// whatever `load` produced. Errors other than qmlx::Error propagate.
std::string load_optional_part(const OptionalPart& part,
                               const std::function<void(MissingTensors&)>& load);

}  // namespace qmlx
