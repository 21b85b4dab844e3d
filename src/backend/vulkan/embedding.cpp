#include "backend/vulkan/embedding.h"

#include <algorithm>

#include "backend/vulkan/binding_window.h"
#include "backend/vulkan/fma_mode.h"
#include "backend/vulkan/matmul_layout.h"
#include "base/error.h"

namespace qmlx::vulkan {
namespace {

struct Push {
  uint32_t first_row, rows, cols, table_base, scale_base, bias_base, id_base, out_base;
};

// The shader's FORMAT constant: the float formats by their ScalarType, affine 3, GGUF 4.
uint32_t spec_format(WeightFormat f) {
  switch (f) {
    case WeightFormat::kF16:
      return 1;
    case WeightFormat::kBF16:
      return 2;
    case WeightFormat::kAffine:
      return 3;
    case WeightFormat::kGguf:
      return 4;
    default:
      return 0;
  }
}

}  // namespace

void record_embedding(CommandRecorder& recorder, const DeviceMatrix& table, const Buffer& ids,
                      int T, const Buffer& out) {
  if (T <= 0 || table.rows <= 0) return;
  Context& context = recorder.context();
  const DeviceInfo& device = context.device_info();
  const bool affine = table.format == WeightFormat::kAffine;
  const bool gguf = table.format == WeightFormat::kGguf;
  const size_t element_bytes = weight_element_bytes(table);
  const size_t row = matrix_row_bytes(table);
  const size_t scale_bytes = affine ? scalar_size(table.scale_type) : 0;
  const size_t meta_row = affine ? size_t(table.cols / table.group_size) * scale_bytes : 0;
  const size_t out_row = size_t(table.cols) * 4;
  const size_t capacity = window_capacity(context);

  // Table rows per dispatch: their data (and scales) must fit one binding each. Tokens per
  // dispatch: one workgroup each, their output rows within one binding.
  size_t rows_per = std::min<size_t>(table.rows, (capacity - (gguf ? kBlockWindowSlack : 0)) / row);
  if (affine) rows_per = std::min(rows_per, capacity / meta_row);
  const size_t tokens_per =
      std::min({size_t(T), size_t(device.max_workgroup_count[0]), capacity / out_row});
  if (rows_per == 0 || tokens_per == 0)
    throw Error("Vulkan embedding: rows of " + std::to_string(table.cols) +
                " columns are wider than " + device.name + " can bind");

  const Pipeline& pipeline = context.pipelines().get(
      {fma_shader(context, "embedding"),
       5,
       sizeof(Push),
       {spec_format(table.format), uint32_t(table.bits), uint32_t(table.group_size),
        uint32_t(table.scale_type), uint32_t(table.gguf_type)}});
  // Float tables have no scales: their slots bind the ids again, never read.
  for (size_t t0 = 0; t0 < size_t(T); t0 += tokens_per) {
    const size_t nt = std::min(tokens_per, size_t(T) - t0);
    const Window id = window(context, ids, t0 * 4, (t0 + nt) * 4, 4, Access::kRead);
    const Window target =
        window(context, out, t0 * out_row, (t0 + nt) * out_row, 4, Access::kWrite);
    for (size_t r0 = 0; r0 < size_t(table.rows); r0 += rows_per) {
      const size_t nr = std::min(rows_per, size_t(table.rows) - r0);
      Window data;
      if (gguf) {
        const BlockWindow blocks = block_window(context, table.data, r0 * row, (r0 + nr) * row);
        data = {blocks.binding, blocks.byte_base};
      } else {
        data = window(context, table.data, r0 * row, (r0 + nr) * row, element_bytes, Access::kRead);
      }
      Window scales = id, biases = id;
      if (affine) {
        scales = window(context, table.scales, r0 * meta_row, (r0 + nr) * meta_row, scale_bytes,
                        Access::kRead);
        biases = window(context, table.biases, r0 * meta_row, (r0 + nr) * meta_row, scale_bytes,
                        Access::kRead);
      }
      const Push push{uint32_t(r0), uint32_t(nr), uint32_t(table.cols), data.base, scales.base,
                      biases.base,  id.base,      target.base};
      const Binding bindings[] = {data.binding, scales.binding, biases.binding, id.binding,
                                  target.binding};
      recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(nt));
    }
  }
}

}  // namespace qmlx::vulkan
