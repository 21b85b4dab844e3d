// GgufFile: a memory-mapped GGUF v3 file (llama.cpp's model container). Parses the header,
// the metadata key/value pairs (kept as JSON values: numbers, strings, bools and arrays) and the
// tensor infos; tensor data stays in the mapping, in its stored form. Every length, offset and
// type is checked against the file: errors name the file and, where one is involved, the tensor
// (a tensor of a type this engine cannot read is reported with ggml's name for the type).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "kernels/gguf_blocks.h"

namespace qmlx {

struct GgufTensor {
  std::string name;
  std::vector<int64_t> ne;  // ggml order: ne[0] is the row length
  GgufType type = GgufType::kF32;
  const uint8_t* data = nullptr;
  size_t bytes = 0;

  int64_t elements() const;
  std::string describe() const;  // "blk.0.attn_q.weight (Q8_0 [64, 128])"
};

class GgufFile {
 public:
  // Throws qmlx::Error naming the path on anything malformed.
  explicit GgufFile(const std::string& path);

  const std::string& path() const { return file_.path(); }
  uint32_t version() const { return version_; }
  const nlohmann::json& metadata() const { return metadata_; }
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find(const std::string& name) const;

  // Frees the parsed metadata (metadata() is empty afterwards). The model keeps the file for
  // its tensor mapping only; the tokenizer's vocabulary and merges are most of the metadata,
  // ~20 MB of parsed strings for a 248k-token vocabulary, and the text layer reads its own copy.
  void release_metadata() { metadata_ = nlohmann::json::object(); }

 private:
  MappedFile file_;
  uint32_t version_ = 0;
  nlohmann::json metadata_ = nlohmann::json::object();
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> index_;
};

// True when `path` names a GGUF file (by its ".gguf" suffix).
bool is_gguf_path(const std::string& path);

}  // namespace qmlx
