#include "model/gguf_file.h"

#include <cstring>

#include "base/error.h"

namespace qmlx {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr uint32_t kMaxDims = 4;
// 2^48 elements: far past any real tensor, small enough that byte sizes cannot overflow.
constexpr int64_t kMaxElements = int64_t(1) << 48;

// gguf_metadata_value_type
enum ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// Sequential little-endian reads that never run past the end of the file.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size, const std::string& path)
      : data_(data), size_(size), path_(path) {}

  template <typename T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string string(const char* what) {
    const uint64_t n = get<uint64_t>(what);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }
  size_t pos() const { return pos_; }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(path_ + ": " + what + " (GGUF)");
  }

 private:
  void need(uint64_t n, const char* what) const {
    if (n > size_ - pos_) fail(std::string("truncated file while reading ") + what);
  }
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& path_;
};

nlohmann::json read_value(Reader& r, uint32_t type, int depth) {
  switch (type) {
    case kUint8:
      return r.get<uint8_t>("a value");
    case kInt8:
      return r.get<int8_t>("a value");
    case kUint16:
      return r.get<uint16_t>("a value");
    case kInt16:
      return r.get<int16_t>("a value");
    case kUint32:
      return r.get<uint32_t>("a value");
    case kInt32:
      return r.get<int32_t>("a value");
    case kFloat32:
      return r.get<float>("a value");
    case kBool:
      return r.get<uint8_t>("a value") != 0;
    case kString:
      return r.string("a string value");
    case kUint64:
      return r.get<uint64_t>("a value");
    case kInt64:
      return r.get<int64_t>("a value");
    case kFloat64:
      return r.get<double>("a value");
    case kArray: {
      if (depth > 0) r.fail("nested metadata arrays are not supported");
      const uint32_t element_type = r.get<uint32_t>("an array type");
      const uint64_t count = r.get<uint64_t>("an array length");
      nlohmann::json array = nlohmann::json::array();
      for (uint64_t i = 0; i < count; ++i) array.push_back(read_value(r, element_type, depth + 1));
      return array;
    }
    default:
      r.fail("unknown metadata value type " + std::to_string(type));
  }
}

}  // namespace

int64_t GgufTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

std::string GgufTensor::describe() const {
  std::string dims;
  for (size_t i = 0; i < ne.size(); ++i) dims += (i ? ", " : "") + std::to_string(ne[i]);
  return name + " (" + gguf_type_name(type) + " [" + dims + "])";
}

GgufFile::GgufFile(const std::string& path) : file_(path) {
  const auto bytes = file_.bytes();
  Reader r(bytes.data(), bytes.size(), file_.path());
  if (r.get<uint32_t>("the magic") != kMagic) r.fail("not a GGUF file (bad magic)");
  version_ = r.get<uint32_t>("the version");
  if (version_ != 3) r.fail("unsupported GGUF version " + std::to_string(version_) + " (need 3)");
  const uint64_t tensor_count = r.get<uint64_t>("the tensor count");
  const uint64_t kv_count = r.get<uint64_t>("the metadata count");
  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string key = r.string("a metadata key");
    const uint32_t type = r.get<uint32_t>("a metadata type");
    metadata_[key] = read_value(r, type, 0);
  }
  struct Info {
    GgufTensor tensor;
    uint64_t offset;
  };
  std::vector<Info> infos;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    Info info;
    GgufTensor& t = info.tensor;
    t.name = r.string("a tensor name");
    const uint32_t dims = r.get<uint32_t>("a tensor's dimension count");
    if (dims == 0 || dims > kMaxDims)
      r.fail("tensor " + t.name + " has " + std::to_string(dims) + " dimensions");
    // The element count is checked as it is multiplied: dimensions of 2^40 each overflowed
    // int64 (undefined), and a wrapped count made the tensor's byte size small enough to pass
    // the bounds check below while the real tensor ran far past the file.
    int64_t elements = 1;
    for (uint32_t d = 0; d < dims; ++d) {
      const int64_t n = int64_t(r.get<uint64_t>("a tensor dimension"));
      if (n <= 0 || n > (int64_t(1) << 40)) r.fail("tensor " + t.name + " has a bad dimension");
      if (__builtin_mul_overflow(elements, n, &elements) || elements > kMaxElements) {
        r.fail("tensor " + t.name + " has more elements than a file can hold");
      }
      t.ne.push_back(n);
    }
    const uint32_t type_id = r.get<uint32_t>("a tensor type");
    const auto type = gguf_type_from_id(type_id);
    if (!type)
      r.fail("tensor " + t.name + " has GGUF type " + gguf_type_id_name(type_id) +
             ", which qmlx does not support (supported: F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 "
             "Q2_K Q3_K Q4_K Q5_K Q6_K)");
    t.type = *type;
    if (t.ne[0] % gguf_block_elems(t.type) != 0)
      r.fail("tensor " + t.describe() + ": rows are not whole " + gguf_type_name(t.type) +
             " blocks");
    t.bytes = gguf_bytes(t.type, size_t(t.elements()));
    info.offset = r.get<uint64_t>("a tensor offset");
    if (index_.count(t.name)) r.fail("duplicate tensor " + t.name);
    index_[t.name] = infos.size();
    infos.push_back(std::move(info));
  }
  uint64_t alignment = 32;
  if (metadata_.contains("general.alignment")) {
    const auto& a = metadata_["general.alignment"];
    if (!a.is_number_unsigned() || a.get<uint64_t>() == 0 ||
        (a.get<uint64_t>() & (a.get<uint64_t>() - 1)) != 0)
      r.fail("general.alignment must be a power of two");
    alignment = a.get<uint64_t>();
  }
  const uint64_t data_start = (r.pos() + alignment - 1) / alignment * alignment;
  for (Info& info : infos) {
    GgufTensor& t = info.tensor;
    if (info.offset % alignment != 0) r.fail("tensor " + t.name + " is not aligned");
    if (data_start > bytes.size() || info.offset > bytes.size() - data_start ||
        t.bytes > bytes.size() - data_start - info.offset)
      r.fail("truncated file: tensor " + t.describe() + " runs past the end");
    t.data = bytes.data() + data_start + info.offset;
    tensors_.push_back(std::move(t));
  }
}

const GgufTensor* GgufFile::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

bool is_gguf_path(const std::string& path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".gguf") == 0;
}

}  // namespace qmlx
