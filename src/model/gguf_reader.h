// Reading a GGUF file's metadata and tensors for a loader: typed metadata look-ups that name
// the file and the key on failure, and GgufWeightReader, which maps llama.cpp's tensors to
// WeightMatrix views (ggml's reversed dims checked; matrices stay in their stored type) and
// float vectors, tracks which tensors were used so that a stray one is an error, and, while an
// optional part loads, records missing tensors instead of throwing (optional_parts.h). Shared
// by the text model's loader (gguf_weights.cpp) and the mmproj vision tower's
// (mmproj_weights.cpp).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/weight_matrix.h"
#include "model/gguf_file.h"
#include "model/optional_parts.h"

namespace qmlx {

class GgufMetadata {
 public:
  explicit GgufMetadata(const GgufFile& f) : f_(f) {}
  const nlohmann::json* find(const std::string& key) const;
  int64_t integer(const std::string& key) const;
  int64_t integer(const std::string& key, int64_t fallback) const;
  double number(const std::string& key, double fallback) const;
  std::string string(const std::string& key) const;

 private:
  const GgufFile& f_;
};

// How a tensor of this GGUF type is read as a WeightMatrix: F32, F16 and BF16 as plain rows,
// every other type as its GGUF blocks (WeightMatrix::gguf_type).
WeightFormat weight_format_of(GgufType type);

class GgufWeightReader {
 public:
  // `kind` names what the file should hold, for the unexpected-tensor error ("qwen35").
  GgufWeightReader(const GgufFile& file, std::string kind) : f_(file), kind_(std::move(kind)) {}

  const GgufFile& file() const { return f_; }
  const GgufTensor& use(const std::string& name);
  // use(), except that while an optional part loads (collect_missing) a missing tensor is
  // recorded and null is returned.
  const GgufTensor* take(const std::string& name);
  bool has(const std::string& name) const { return f_.find(name) != nullptr; }
  bool has_prefix(const std::string& prefix) const;
  // Missing tensors are recorded in `missing` (null: they throw) from now on.
  void collect_missing(MissingTensors* missing) { missing_ = missing; }
  // Tensors under `prefix` (a dropped optional part's) are not reported as unexpected.
  void excuse_unused(const std::string& prefix) { excused_.push_back(prefix); }

  // A [rows, cols] matrix, or expert `index` of a [E, rows, cols] stack.
  WeightMatrix matrix(const std::string& name, int rows, int cols, int experts = 0, int index = 0);
  // A float vector of n values (a [n] or [n, 1] tensor of any type).
  std::vector<float> vector(const std::string& name, int64_t n);

  void reject_unused() const;
  [[noreturn]] void fail(const GgufTensor& t, const std::string& what) const;

  // ggml dims without trailing 1s ([H] and [H, 1] are the same tensor), and as text.
  static std::vector<int64_t> squeezed(std::vector<int64_t> ne);
  static std::string dims(const std::vector<int64_t>& ne);

 private:
  const GgufFile& f_;
  std::string kind_;
  std::set<std::string> used_;
  MissingTensors* missing_ = nullptr;
  std::vector<std::string> excused_;
};

}  // namespace qmlx
