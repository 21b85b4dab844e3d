#include "modelgen/logical_model.h"

#include "base/error.h"

namespace qmlx::modelgen {

int64_t LogicalTensor::element_count() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

void LogicalModel::add(const std::string& name, std::vector<int64_t> shape,
                       std::function<std::vector<float>()> values) {
  tensors_[name] = LogicalTensor{std::move(shape), std::move(values)};
}

const LogicalTensor& LogicalModel::at(const std::string& name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error("model generator: no tensor " + name);
  return it->second;
}

std::string layer_name(int layer, const std::string& suffix) {
  return "layers." + std::to_string(layer) + "." + suffix;
}

}  // namespace qmlx::modelgen
