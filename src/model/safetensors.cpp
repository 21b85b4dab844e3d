#include "model/safetensors.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace qmlx {
namespace {

using nlohmann::json;

TensorDType parse_dtype(const std::string& s) {
  if (s == "F32") return TensorDType::kF32;
  if (s == "F16") return TensorDType::kF16;
  if (s == "BF16") return TensorDType::kBF16;
  if (s == "U32") return TensorDType::kU32;
  return TensorDType::kOther;
}

size_t element_size(const std::string& dtype) {
  static const std::map<std::string, size_t> sizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2},  {"BF16", 2},    {"I64", 8},
      {"I32", 4}, {"I16", 2}, {"I8", 1},   {"U64", 8},     {"U32", 4},
      {"U16", 2}, {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

TensorInfo parse_entry(const std::string& path, const std::string& name, const json& e,
                       const uint8_t* data_begin, size_t data_size) {
  auto fail = [&](const std::string& what) {
    throw Error(path + ": tensor '" + name + "': " + what);
  };
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
    fail("header entry lacks dtype, shape or data_offsets");
  TensorInfo t;
  t.name = name;
  t.file = path;
  try {
    t.dtype_name = e["dtype"].get<std::string>();
    t.shape = e["shape"].get<std::vector<int64_t>>();
    auto offsets = e["data_offsets"].get<std::vector<uint64_t>>();
    if (offsets.size() != 2 || offsets[0] > offsets[1]) fail("bad data_offsets");
    if (offsets[1] > data_size)
      fail("data ends at byte " + std::to_string(offsets[1]) + " but the file holds only " +
           std::to_string(data_size) + " data bytes (truncated file?)");
    t.data = data_begin + offsets[0];
    t.nbytes = offsets[1] - offsets[0];
  } catch (const json::exception&) {
    fail("malformed header entry");
  }
  t.dtype = parse_dtype(t.dtype_name);
  for (int64_t d : t.shape)
    if (d < 0) fail("negative dimension");
  size_t elem = element_size(t.dtype_name);
  if (elem == 0) fail("unknown dtype " + t.dtype_name);
  if (size_t(t.numel()) * elem != t.nbytes)
    fail("shape " + t.describe_shape() + " of " + t.dtype_name + " needs " +
         std::to_string(t.numel() * elem) + " bytes but data_offsets span " +
         std::to_string(t.nbytes));
  return t;
}

}  // namespace

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorInfo::describe_shape() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void TensorStore::add_file(const std::string& path) {
  auto file = std::make_unique<MappedFile>(path);
  const size_t size = file->size();
  const uint8_t* bytes = file->bytes().data();
  if (size < 8)
    throw Error(path + ": truncated safetensors file (" + std::to_string(size) +
                " bytes, no header)");
  uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= uint64_t(bytes[i]) << (8 * i);
  if (header_len > size - 8)
    throw Error(path + ": safetensors header length " + std::to_string(header_len) +
                " is larger than the file (" + std::to_string(size) + " bytes)");
  json header;
  try {
    header = json::parse(bytes + 8, bytes + 8 + header_len);
  } catch (const json::exception& e) {
    throw Error(path + ": invalid safetensors header JSON: " + e.what());
  }
  if (!header.is_object()) throw Error(path + ": safetensors header is not a JSON object");
  const uint8_t* data_begin = bytes + 8 + header_len;
  const size_t data_size = size - 8 - header_len;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    if (tensors_.count(it.key()))
      throw Error(path + ": tensor '" + it.key() + "' also appears in " + tensors_[it.key()].file);
    tensors_[it.key()] = parse_entry(path, it.key(), it.value(), data_begin, data_size);
  }
  files_.push_back(std::move(file));
}

std::unique_ptr<TensorStore> TensorStore::open_file(const std::string& path) {
  auto store = std::unique_ptr<TensorStore>(new TensorStore());
  store->location_ = path;
  store->add_file(path);
  return store;
}

std::unique_ptr<TensorStore> TensorStore::open_directory(const std::string& dir) {
  namespace fs = std::filesystem;
  auto store = std::unique_ptr<TensorStore>(new TensorStore());
  store->location_ = dir;
  const std::string index_path = dir + "/model.safetensors.index.json";
  if (fs::exists(index_path)) {
    std::ifstream in(index_path);
    json index;
    try {
      index = json::parse(in);
    } catch (const json::exception& e) {
      throw Error(index_path + ": invalid JSON: " + e.what());
    }
    if (!index.contains("weight_map") || !index["weight_map"].is_object())
      throw Error(index_path + ": no weight_map");
    std::map<std::string, std::string> tensor_to_file;
    std::set<std::string> shards;
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
      tensor_to_file[it.key()] = it.value().get<std::string>();
      shards.insert(it.value().get<std::string>());
    }
    for (const auto& shard : shards) {
      std::string path = dir + "/" + shard;
      if (!fs::exists(path)) {
        auto holder = std::find_if(tensor_to_file.begin(), tensor_to_file.end(),
                                   [&](const auto& kv) { return kv.second == shard; });
        throw Error(path + ": missing file (listed in " + index_path + " for tensor '" +
                    holder->first + "')");
      }
      store->add_file(path);
    }
    for (const auto& [name, shard] : tensor_to_file)
      if (!store->tensors_.count(name))
        throw Error(dir + "/" + shard + ": missing tensor '" + name + "' listed in " + index_path);
    return store;
  }
  std::vector<std::string> files;
  if (fs::is_directory(dir))
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.path().extension() == ".safetensors") files.push_back(entry.path().string());
  if (files.empty()) throw Error(dir + "/model.safetensors: missing file (no *.safetensors)");
  std::sort(files.begin(), files.end());
  for (const auto& f : files) store->add_file(f);
  return store;
}

const TensorInfo* TensorStore::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const TensorInfo& TensorStore::use(const std::string& name) const {
  const TensorInfo* t = find(name);
  if (!t) throw Error(location_ + ": missing tensor '" + name + "'");
  used_.insert(name);
  return *t;
}

std::vector<std::string> TensorStore::unused() const {
  std::vector<std::string> out;
  for (const auto& [name, t] : tensors_)
    if (!used_.count(name)) out.push_back(name);
  return out;
}

}  // namespace qmlx
