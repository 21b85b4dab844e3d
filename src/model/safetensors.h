// Safetensors reading over memory-mapped files. A checkpoint is one `model.safetensors`, several
// `*.safetensors` shards, or shards listed by `model.safetensors.index.json`. Headers are
// validated before any tensor is touched (size, JSON, dtypes, offsets inside the data region),
// so a truncated or corrupt file fails with an Error naming the file and the tensor.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/mapped_file.h"

namespace qmlx {

enum class TensorDType { kF32, kF16, kBF16, kU32, kOther };

struct TensorInfo {
  std::string name;
  std::string file;        // path of the file holding it
  std::string dtype_name;  // as written in the header, e.g. "BF16"
  TensorDType dtype = TensorDType::kOther;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t nbytes = 0;

  int64_t numel() const;
  std::string describe_shape() const;  // "[4, 8]"
};

// All tensors of one checkpoint directory, by name. Tracks which were used, so the loader can
// reject tensors it does not understand.
class TensorStore {
 public:
  static std::unique_ptr<TensorStore> open_directory(const std::string& dir);
  // Parses one file (also used by tests).
  static std::unique_ptr<TensorStore> open_file(const std::string& path);

  const TensorInfo* find(const std::string& name) const;
  // Throws "missing tensor" naming the directory when absent; marks the tensor used.
  const TensorInfo& use(const std::string& name) const;
  bool contains(const std::string& name) const { return find(name) != nullptr; }
  std::vector<std::string> unused() const;
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::string& location() const { return location_; }

 private:
  void add_file(const std::string& path);

  std::string location_;
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::map<std::string, TensorInfo> tensors_;
  mutable std::set<std::string> used_;
};

}  // namespace qmlx
