// Safetensors writer: writes named tensors into one `model.safetensors` file, or into N
// shards `model-0000i-of-0000N.safetensors` plus `model.safetensors.index.json`, in the
// format Hugging Face and MLX use (8-byte little-endian header length, JSON header padded
// with spaces to a multiple of 8, then the raw little-endian data). Tensor bytes are
// produced on demand by a fill callback, so models larger than memory can be written.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "modelgen/tensor_dtype.h"

namespace qmlx::modelgen {

struct TensorEntry {
  std::string name;
  TensorDType dtype = TensorDType::kF32;
  std::vector<int64_t> shape;
  // Writes exactly byte_size() bytes into `out`. Called once, in file order.
  std::function<void(std::span<uint8_t> out)> fill;

  int64_t element_count() const;
  size_t byte_size() const;
};

using Metadata = std::map<std::string, std::string>;

// The JSON header of a file holding `tensors` in the given order (offsets are contiguous).
std::string safetensors_header(std::span<const TensorEntry> tensors, const Metadata& metadata);

// Writes one safetensors file; throws qmlx::Error naming `path` on I/O failure.
void write_safetensors_file(const std::string& path, std::span<const TensorEntry> tensors,
                            const Metadata& metadata);

// Writes `tensors` (sorted by name) into `dir`: a single model.safetensors when shards <= 1,
// otherwise `shards` files of roughly equal size plus model.safetensors.index.json.
void write_safetensors_model(const std::string& dir, std::vector<TensorEntry> tensors, int shards,
                             const Metadata& metadata);

}  // namespace qmlx::modelgen
