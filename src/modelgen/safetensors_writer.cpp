#include "modelgen/safetensors_writer.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace qmlx::modelgen {

int64_t TensorEntry::element_count() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

size_t TensorEntry::byte_size() const {
  return static_cast<size_t>(element_count()) * dtype_bytes(dtype);
}

std::string safetensors_header(std::span<const TensorEntry> tensors, const Metadata& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const auto& tensor : tensors) {
    const size_t end = offset + tensor.byte_size();
    header[tensor.name] = {{"dtype", dtype_safetensors_name(tensor.dtype)},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

namespace {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

void write_bytes(std::FILE* file, const void* data, size_t size, const std::string& path) {
  if (size != 0 && std::fwrite(data, 1, size, file) != size) {
    throw Error("cannot write " + path);
  }
}

std::vector<std::vector<TensorEntry>> split_into_shards(std::vector<TensorEntry> tensors,
                                                        int shards) {
  size_t total = 0;
  for (const auto& tensor : tensors) total += tensor.byte_size();
  const size_t target = (total + shards - 1) / shards;
  std::vector<std::vector<TensorEntry>> result(1);
  size_t in_current = 0;
  for (auto& tensor : tensors) {
    const bool current_full = in_current >= target && !result.back().empty();
    if (current_full && static_cast<int>(result.size()) < shards) {
      result.emplace_back();
      in_current = 0;
    }
    in_current += tensor.byte_size();
    result.back().push_back(std::move(tensor));
  }
  // Tiny models may fill fewer shards than asked; an empty shard would be an odd file.
  return result;
}

std::string shard_name(int index, int count) {
  char name[64];
  std::snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors", index + 1, count);
  return name;
}

void write_text_file(const std::string& path, const std::string& text) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "wb"));
  if (!file) throw Error("cannot create " + path);
  write_bytes(file.get(), text.data(), text.size(), path);
}

}  // namespace

void write_safetensors_file(const std::string& path, std::span<const TensorEntry> tensors,
                            const Metadata& metadata) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "wb"));
  if (!file) throw Error("cannot create " + path);
  const std::string header = safetensors_header(tensors, metadata);
  const uint64_t header_size = header.size();
  uint8_t size_bytes[8];
  for (int i = 0; i < 8; ++i) size_bytes[i] = static_cast<uint8_t>(header_size >> (8 * i));
  write_bytes(file.get(), size_bytes, 8, path);
  write_bytes(file.get(), header.data(), header.size(), path);
  std::vector<uint8_t> buffer;
  for (const auto& tensor : tensors) {
    buffer.assign(tensor.byte_size(), 0);
    tensor.fill(buffer);
    write_bytes(file.get(), buffer.data(), buffer.size(), path);
  }
  if (std::fflush(file.get()) != 0) throw Error("cannot write " + path);
}

void write_safetensors_model(const std::string& dir, std::vector<TensorEntry> tensors, int shards,
                             const Metadata& metadata) {
  std::sort(tensors.begin(), tensors.end(),
            [](const TensorEntry& a, const TensorEntry& b) { return a.name < b.name; });
  if (shards <= 1) {
    write_safetensors_file(dir + "/model.safetensors", tensors, metadata);
    return;
  }
  const auto parts = split_into_shards(std::move(tensors), shards);
  const int count = static_cast<int>(parts.size());
  nlohmann::json weight_map = nlohmann::json::object();
  size_t total = 0;
  for (int i = 0; i < count; ++i) {
    const std::string name = shard_name(i, count);
    for (const auto& tensor : parts[i]) {
      weight_map[tensor.name] = name;
      total += tensor.byte_size();
    }
    write_safetensors_file(dir + "/" + name, parts[i], metadata);
  }
  const nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  write_text_file(dir + "/model.safetensors.index.json", index.dump(2) + "\n");
}

}  // namespace qmlx::modelgen
