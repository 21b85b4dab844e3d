// GGUF v3 file writer: the container llama.cpp reads. Layout (all little-endian): magic
// "GGUF", version 3, tensor count (u64), metadata count (u64); metadata as key (u64 length +
// bytes), value type (u32), value; tensor infos as name, n_dims (u32), dims (u64, innermost
// first), ggml type (u32), data offset (u64, relative to the data section); padding to
// `general.alignment` (32); tensor data, each tensor's start aligned.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "modelgen/gguf_quantizer.h"

namespace qmlx::modelgen {

class GgufFileWriter {
 public:
  void add_string(const std::string& key, const std::string& value);
  void add_u32(const std::string& key, uint32_t value);
  void add_i32(const std::string& key, int32_t value);
  void add_f32(const std::string& key, float value);
  void add_bool(const std::string& key, bool value);
  void add_string_array(const std::string& key, const std::vector<std::string>& values);
  void add_i32_array(const std::string& key, const std::vector<int32_t>& values);
  void add_f32_array(const std::string& key, const std::vector<float>& values);

  // A tensor of `ne` (ggml order: ne[0] is the row length) stored as `type`; `encode`
  // returns exactly gguf_quant_bytes(type, elements) bytes and is called once, at write time.
  void add_tensor(const std::string& name, std::vector<int64_t> ne, GgufQuant type,
                  std::function<std::vector<uint8_t>()> encode);

  // Throws qmlx::Error naming `path` on I/O failure.
  void write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> ne;
    GgufQuant type;
    std::function<std::vector<uint8_t>()> encode;
    size_t bytes;
  };
  std::vector<uint8_t> metadata_;  // encoded key/value pairs
  uint64_t metadata_count_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace qmlx::modelgen
