#include "modelgen/gguf_file_writer.h"

#include <cstdio>
#include <cstring>
#include <memory>

#include "base/error.h"

namespace qmlx::modelgen {
namespace {

constexpr uint32_t kAlignment = 32;

// gguf_metadata_value_type
enum ValueType : uint32_t {
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
};

template <typename T>
void put(std::vector<uint8_t>& out, T value) {
  uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

void put_string(std::vector<uint8_t>& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

size_t aligned(size_t offset) { return (offset + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

void GgufFileWriter::add_string(const std::string& key, const std::string& value) {
  put_string(metadata_, key);
  put<uint32_t>(metadata_, kString);
  put_string(metadata_, value);
  ++metadata_count_;
}

void GgufFileWriter::add_u32(const std::string& key, uint32_t value) {
  put_string(metadata_, key);
  put<uint32_t>(metadata_, kUint32);
  put(metadata_, value);
  ++metadata_count_;
}

void GgufFileWriter::add_i32(const std::string& key, int32_t value) {
  put_string(metadata_, key);
  put<uint32_t>(metadata_, kInt32);
  put(metadata_, value);
  ++metadata_count_;
}

void GgufFileWriter::add_f32(const std::string& key, float value) {
  put_string(metadata_, key);
  put<uint32_t>(metadata_, kFloat32);
  put(metadata_, value);
  ++metadata_count_;
}

void GgufFileWriter::add_bool(const std::string& key, bool value) {
  put_string(metadata_, key);
  put<uint32_t>(metadata_, kBool);
  put<uint8_t>(metadata_, value ? 1 : 0);
  ++metadata_count_;
}

void GgufFileWriter::add_string_array(const std::string& key,
                                      const std::vector<std::string>& values) {
  put_string(metadata_, key);
  put<uint32_t>(metadata_, kArray);
  put<uint32_t>(metadata_, kString);
  put<uint64_t>(metadata_, values.size());
  for (const auto& v : values) put_string(metadata_, v);
  ++metadata_count_;
}

void GgufFileWriter::add_i32_array(const std::string& key, const std::vector<int32_t>& values) {
  put_string(metadata_, key);
  put<uint32_t>(metadata_, kArray);
  put<uint32_t>(metadata_, kInt32);
  put<uint64_t>(metadata_, values.size());
  for (int32_t v : values) put(metadata_, v);
  ++metadata_count_;
}

void GgufFileWriter::add_f32_array(const std::string& key, const std::vector<float>& values) {
  put_string(metadata_, key);
  put<uint32_t>(metadata_, kArray);
  put<uint32_t>(metadata_, kFloat32);
  put<uint64_t>(metadata_, values.size());
  for (float v : values) put(metadata_, v);
  ++metadata_count_;
}

void GgufFileWriter::add_tensor(const std::string& name, std::vector<int64_t> ne, GgufQuant type,
                                std::function<std::vector<uint8_t>()> encode) {
  int64_t elements = 1;
  for (int64_t d : ne) elements *= d;
  const size_t bytes = gguf_quant_bytes(type, size_t(elements));
  tensors_.push_back({name, std::move(ne), type, std::move(encode), bytes});
}

void GgufFileWriter::write(const std::string& path) const {
  std::vector<uint8_t> header;
  put<uint32_t>(header, 0x46554747);  // "GGUF"
  put<uint32_t>(header, 3);
  put<uint64_t>(header, tensors_.size());
  put<uint64_t>(header, metadata_count_);
  header.insert(header.end(), metadata_.begin(), metadata_.end());
  size_t offset = 0;
  for (const Tensor& t : tensors_) {
    put_string(header, t.name);
    put<uint32_t>(header, uint32_t(t.ne.size()));
    for (int64_t d : t.ne) put<uint64_t>(header, uint64_t(d));
    put<uint32_t>(header, uint32_t(t.type));
    put<uint64_t>(header, offset);
    offset = aligned(offset + t.bytes);
  }
  header.resize(aligned(header.size()), 0);

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "wb"),
                                                       &std::fclose);
  if (!file) throw Error("cannot create " + path);
  const auto write_bytes = [&](const uint8_t* data, size_t n) {
    if (n && std::fwrite(data, 1, n, file.get()) != n) throw Error("cannot write " + path);
  };
  write_bytes(header.data(), header.size());
  const std::vector<uint8_t> padding(kAlignment, 0);
  for (const Tensor& t : tensors_) {
    const std::vector<uint8_t> data = t.encode();
    if (data.size() != t.bytes) throw Error("GGUF tensor " + t.name + ": wrong encoded size");
    write_bytes(data.data(), data.size());
    write_bytes(padding.data(), aligned(t.bytes) - t.bytes);
  }
  if (std::fflush(file.get()) != 0) throw Error("cannot write " + path);
}

}  // namespace qmlx::modelgen
