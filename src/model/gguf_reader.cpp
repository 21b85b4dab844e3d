#include "model/gguf_reader.h"

#include <algorithm>

#include "base/error.h"

namespace qmlx {

using nlohmann::json;

const json* GgufMetadata::find(const std::string& key) const {
  const auto& m = f_.metadata();
  const auto it = m.find(key);
  return it == m.end() ? nullptr : &*it;
}

int64_t GgufMetadata::integer(const std::string& key) const {
  const json* v = find(key);
  if (!v) throw Error(f_.path() + ": GGUF metadata key " + key + " is missing");
  if (!v->is_number_integer())
    throw Error(f_.path() + ": GGUF metadata " + key + " is not an integer");
  return v->get<int64_t>();
}

int64_t GgufMetadata::integer(const std::string& key, int64_t fallback) const {
  return find(key) ? integer(key) : fallback;
}

double GgufMetadata::number(const std::string& key, double fallback) const {
  const json* v = find(key);
  if (!v) return fallback;
  if (!v->is_number()) throw Error(f_.path() + ": GGUF metadata " + key + " is not a number");
  return v->get<double>();
}

std::string GgufMetadata::string(const std::string& key) const {
  const json* v = find(key);
  if (!v || !v->is_string()) throw Error(f_.path() + ": GGUF metadata key " + key + " is missing");
  return v->get<std::string>();
}

const GgufTensor& GgufWeightReader::use(const std::string& name) {
  const GgufTensor* t = f_.find(name);
  if (!t) throw Error(f_.path() + ": tensor " + name + " is missing (GGUF)");
  used_.insert(name);
  return *t;
}

const GgufTensor* GgufWeightReader::take(const std::string& name) {
  if (missing_ && !has(name)) {
    missing_->add(name);
    return nullptr;
  }
  return &use(name);
}

bool GgufWeightReader::has_prefix(const std::string& prefix) const {
  for (const GgufTensor& t : f_.tensors())
    if (t.name.starts_with(prefix)) return true;
  return false;
}

WeightFormat weight_format_of(GgufType type) {
  switch (type) {
    case GgufType::kF32:
      return WeightFormat::kF32;
    case GgufType::kF16:
      return WeightFormat::kF16;
    case GgufType::kBF16:
      return WeightFormat::kBF16;
    default:
      return WeightFormat::kGguf;
  }
}

WeightMatrix GgufWeightReader::matrix(const std::string& name, int rows, int cols, int experts,
                                      int index) {
  const GgufTensor* found = take(name);
  if (!found) return {};
  const GgufTensor& t = *found;
  std::vector<int64_t> expected = {cols, rows};
  if (experts) expected.push_back(experts);
  if (squeezed(t.ne) != squeezed(expected)) fail(t, "wrong shape, expected " + dims(expected));
  WeightMatrix m;
  m.format = weight_format_of(t.type);
  if (m.format == WeightFormat::kGguf) m.gguf_type = t.type;
  m.rows = rows;
  m.cols = cols;
  m.data = t.data + size_t(index) * rows * m.row_bytes();
  return m;
}

std::vector<float> GgufWeightReader::vector(const std::string& name, int64_t n) {
  const GgufTensor* found = take(name);
  if (!found) return std::vector<float>(n);
  const GgufTensor& t = *found;
  if (t.elements() != n || t.ne[0] != n)
    fail(t, "wrong shape, expected [" + std::to_string(n) + "]");
  std::vector<float> v(n);
  gguf_dequantize(t.type, t.data, size_t(n), v.data());
  return v;
}

void GgufWeightReader::reject_unused() const {
  for (const auto& t : f_.tensors()) {
    const auto excused = [&t](const std::string& p) { return t.name.starts_with(p); };
    if (!used_.count(t.name) && std::none_of(excused_.begin(), excused_.end(), excused))
      throw Error(f_.path() + ": unexpected tensor " + t.describe() + " for " + kind_ + " (GGUF)");
  }
}

void GgufWeightReader::fail(const GgufTensor& t, const std::string& what) const {
  throw Error(f_.path() + ": tensor " + t.describe() + ": " + what);
}

std::vector<int64_t> GgufWeightReader::squeezed(std::vector<int64_t> ne) {
  while (ne.size() > 1 && ne.back() == 1) ne.pop_back();
  return ne;
}

std::string GgufWeightReader::dims(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

}  // namespace qmlx
