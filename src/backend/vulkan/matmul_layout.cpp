#include "backend/vulkan/matmul_layout.h"

#include "backend/vulkan/binding_window.h"
#include "kernels/gguf_blocks.h"

namespace qmlx::vulkan {

size_t weight_element_bytes(const DeviceMatrix& w) {
  return w.format == WeightFormat::kBF16 || w.format == WeightFormat::kF16 ? 2 : 4;
}

BlockWindow block_window(const Context& context, const Buffer& buffer, size_t begin, size_t end) {
  const size_t first = begin & ~size_t(3), last = (end + 3) & ~size_t(3);
  const Window w = window(context, buffer, first, last, 4, Access::kRead);
  return {w.binding, w.base * 4 + uint32_t(begin - first)};
}

size_t matrix_row_bytes(const DeviceMatrix& w) {
  if (w.format == WeightFormat::kAffine) return size_t(w.cols) * w.bits / 8;
  if (w.format == WeightFormat::kGguf) return gguf_bytes(w.gguf_type, size_t(w.cols));
  return size_t(w.cols) * weight_element_bytes(w);
}

size_t matrix_meta_row_bytes(const DeviceMatrix& w) {
  if (w.format != WeightFormat::kAffine) return 0;
  return size_t(w.cols / w.group_size) * scalar_size(w.scale_type);
}

size_t matmul_rows_per_group(const DeviceMatrix& w) {
  if (w.format == WeightFormat::kAffine || w.format == WeightFormat::kGguf) return 1;
  return w.format == WeightFormat::kF32 ? 4 : 8;
}

std::vector<uint32_t> matmul_specialization(const DeviceMatrix& w) {
  if (w.format == WeightFormat::kAffine)
    return {uint32_t(w.bits), uint32_t(w.group_size), uint32_t(w.scale_type)};
  if (w.format == WeightFormat::kGguf)
    return {uint32_t(w.bits), uint32_t(w.group_size), uint32_t(w.gguf_type)};
  return {w.format == WeightFormat::kF16 ? 1u : w.format == WeightFormat::kBF16 ? 2u : 0u};
}

}  // namespace qmlx::vulkan
