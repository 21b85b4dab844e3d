#include "backend/vulkan/matmul_layout.h"

namespace qmlx::vulkan {

size_t weight_element_bytes(const DeviceMatrix& w) {
  return w.format == WeightFormat::kAffine ? 4 : w.format == WeightFormat::kF32 ? 4 : 2;
}

size_t matrix_row_bytes(const DeviceMatrix& w) {
  if (w.format == WeightFormat::kAffine) return size_t(w.cols) * w.bits / 8;
  return size_t(w.cols) * weight_element_bytes(w);
}

size_t matrix_meta_row_bytes(const DeviceMatrix& w) {
  if (w.format != WeightFormat::kAffine) return 0;
  return size_t(w.cols / w.group_size) * scalar_size(w.scale_type);
}

size_t matmul_rows_per_group(const DeviceMatrix& w) {
  if (w.format == WeightFormat::kAffine) return 1;
  return w.format == WeightFormat::kF32 ? 4 : 8;
}

std::vector<uint32_t> matmul_specialization(const DeviceMatrix& w) {
  if (w.format == WeightFormat::kAffine)
    return {uint32_t(w.bits), uint32_t(w.group_size), uint32_t(w.scale_type)};
  return {w.format == WeightFormat::kF16 ? 1u : w.format == WeightFormat::kBF16 ? 2u : 0u};
}

}  // namespace qmlx::vulkan
