#include "backend/vulkan/matmul.h"

#include <algorithm>

#include "backend/vulkan/binding_window.h"
#include "backend/vulkan/fma_mode.h"
#include "base/error.h"

namespace qmlx::vulkan {
namespace {

struct FloatPush {
  uint32_t rows, cols, w_base, x_base, y_base, y_stride;
};

struct AffinePush {
  uint32_t rows, cols, code_base, scale_base, bias_base, x_base, y_base, y_stride;
};

size_t weight_element_bytes(const DeviceMatrix& w) {
  return w.format == WeightFormat::kAffine ? 4 : w.format == WeightFormat::kF32 ? 4 : 2;
}

// Bytes of codes (or weights) in one row.
size_t row_bytes(const DeviceMatrix& w) {
  if (w.format == WeightFormat::kAffine) return size_t(w.cols) * w.bits / 8;
  return size_t(w.cols) * weight_element_bytes(w);
}

uint32_t spec_weight_type(WeightFormat f) {
  return f == WeightFormat::kF16 ? 1u : f == WeightFormat::kBF16 ? 2u : 0u;
}

// Outputs one workgroup computes: matmul_float.comp gives each 16 (f32) or 8 (16-bit) lanes of
// its 64; matmul_affine.comp gives one output all 64.
size_t rows_per_group(const DeviceMatrix& w) {
  if (w.format == WeightFormat::kAffine) return 1;
  return w.format == WeightFormat::kF32 ? 4 : 8;
}

}  // namespace

bool device_matmul_supports(const WeightMatrix& w, std::string* why) {
  auto no = [&](const std::string& reason) {
    if (why != nullptr) *why = reason;
    return false;
  };
  if (w.tiled) return no("tiled weight layout");
  switch (w.format) {
    case WeightFormat::kF32:
    case WeightFormat::kF16:
    case WeightFormat::kBF16:
      return true;
    case WeightFormat::kAffine:
      if (w.bits != 4 && w.bits != 8) return no(std::to_string(w.bits) + "-bit affine codes");
      if (w.group_size != 32 && w.group_size != 64 && w.group_size != 128)
        return no("affine group size " + std::to_string(w.group_size));
      return true;
    case WeightFormat::kGguf:
      return no("GGUF block formats");
  }
  return no("unknown format");
}

DeviceMatrix upload_matrix(Context& context, const WeightMatrix& w) {
  std::string why;
  if (!device_matmul_supports(w, &why)) throw Error("Vulkan matmul: unsupported weights: " + why);
  DeviceMatrix d;
  d.format = w.format;
  d.rows = w.rows;
  d.cols = w.cols;
  d.bits = w.bits;
  d.group_size = w.group_size;
  d.scale_type = w.scale_type;
  const size_t data_bytes = size_t(w.rows) * w.row_bytes();
  d.data = context.create_buffer(data_bytes);
  context.upload(d.data, 0, w.data, data_bytes);
  if (w.quantized()) {
    const size_t meta = size_t(w.rows) * w.groups_per_row() * scalar_size(w.scale_type);
    d.scales = context.create_buffer(meta);
    d.biases = context.create_buffer(meta);
    context.upload(d.scales, 0, w.scales, meta);
    context.upload(d.biases, 0, w.biases, meta);
  }
  return d;
}

void record_matmul(CommandRecorder& recorder, const DeviceMatrix& w, const Buffer& x, int T,
                   const Buffer& y) {
  if (T <= 0 || w.rows <= 0) return;
  Context& context = recorder.context();
  const DeviceInfo& device = context.device_info();
  const bool affine = w.format == WeightFormat::kAffine;
  const size_t capacity = window_capacity(context);
  const size_t row = row_bytes(w);
  const size_t scale_bytes = affine ? scalar_size(w.scale_type) : 0;
  const size_t meta_row = affine ? size_t(w.cols / w.group_size) * scale_bytes : 0;
  const size_t x_row = size_t(w.cols) * 4, y_row = size_t(w.rows) * 4;

  // Rows per dispatch: the weights (and scales) of the rows must fit one binding each.
  const size_t group_rows = rows_per_group(w);
  size_t rows_per = std::min<size_t>(w.rows, size_t(device.max_workgroup_count[0]) * group_rows);
  rows_per = std::min(rows_per, capacity / row);
  if (affine) rows_per = std::min(rows_per, capacity / meta_row);
  // Tokens per dispatch: their inputs and outputs must fit one binding each.
  size_t tokens_per = std::min<size_t>(T, device.max_workgroup_count[1]);
  tokens_per = std::min({tokens_per, capacity / x_row, capacity / y_row});
  if (rows_per == 0 || tokens_per == 0)
    throw Error("Vulkan matmul: a " + std::to_string(w.rows) + "x" + std::to_string(w.cols) +
                " matrix has rows wider than " + device.name + " can bind");

  const Pipeline* pipeline;
  if (affine) {
    pipeline = &context.pipelines().get(
        {fma_shader(context, "matmul_affine"),
         5,
         sizeof(AffinePush),
         {uint32_t(w.bits), uint32_t(w.group_size), uint32_t(w.scale_type)}});
  } else {
    pipeline = &context.pipelines().get(
        {fma_shader(context, "matmul_float"), 3, sizeof(FloatPush), {spec_weight_type(w.format)}});
  }

  for (size_t t0 = 0; t0 < size_t(T); t0 += tokens_per) {
    const size_t nt = std::min(tokens_per, size_t(T) - t0);
    const Window in = window(context, x, t0 * x_row, (t0 + nt) * x_row, 4, Access::kRead);
    for (size_t r0 = 0; r0 < size_t(w.rows); r0 += rows_per) {
      const size_t nr = std::min(rows_per, size_t(w.rows) - r0);
      const Window weights = window(context, w.data, r0 * row, (r0 + nr) * row,
                                    weight_element_bytes(w), Access::kRead);
      // The outputs of these rows for these tokens: a strided block of y.
      const Window out = window(context, y, (t0 * w.rows + r0) * 4,
                                ((t0 + nt - 1) * w.rows + r0 + nr) * 4, 4, Access::kWrite);
      if (!affine) {
        const FloatPush push{uint32_t(nr), uint32_t(w.cols), weights.base,
                             in.base,      out.base,         uint32_t(w.rows)};
        const Binding bindings[] = {weights.binding, in.binding, out.binding};
        recorder.dispatch(*pipeline, bindings, &push, sizeof push,
                          uint32_t((nr + group_rows - 1) / group_rows), uint32_t(nt));
        continue;
      }
      const Window scales = window(context, w.scales, r0 * meta_row, (r0 + nr) * meta_row,
                                   scale_bytes, Access::kRead);
      const Window biases = window(context, w.biases, r0 * meta_row, (r0 + nr) * meta_row,
                                   scale_bytes, Access::kRead);
      const AffinePush push{uint32_t(nr), uint32_t(w.cols), weights.base, scales.base,
                            biases.base,  in.base,          out.base,     uint32_t(w.rows)};
      const Binding bindings[] = {weights.binding, scales.binding, biases.binding, in.binding,
                                  out.binding};
      recorder.dispatch(*pipeline, bindings, &push, sizeof push, uint32_t(nr), uint32_t(nt));
    }
  }
}

}  // namespace qmlx::vulkan
