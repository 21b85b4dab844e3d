#include "backend/vulkan/matmul.h"

#include <algorithm>

#include "backend/vulkan/binding_window.h"
#include "backend/vulkan/fma_mode.h"
#include "backend/vulkan/matmul_layout.h"
#include "base/error.h"
#include "kernels/gguf_affine.h"

namespace qmlx::vulkan {
namespace {

struct FloatPush {
  uint32_t rows, cols, w_base, x_base, y_base, y_stride;
};

struct AffinePush {
  uint32_t rows, cols, code_base, scale_base, bias_base, x_base, y_base, y_stride;
};

struct GgufPush {
  uint32_t rows, cols, byte_base, row_bytes, x_base, y_base, y_stride;
};

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
      // Groups of 16 too: MLX writes none, but the K-quants' rewrites have them, and the GGUF
      // kernels' arithmetic is that of the affine one over those rewrites.
      if (!affine_params_supported(w.bits, w.group_size) &&
          !(w.group_size == 16 && affine_params_supported(w.bits, 32)))
        return no(std::to_string(w.bits) + "-bit affine codes in groups of " +
                  std::to_string(w.group_size));
      return true;
    case WeightFormat::kGguf:
      if (!gguf_affine_supported(w.gguf_type))
        return no(std::string("GGUF ") + gguf_type_name(w.gguf_type) + " blocks");
      return true;
  }
  return no("unknown format");
}

namespace {

// A matrix of `rows` rows in the device format of `like`, without its buffers.
DeviceMatrix device_shape(const WeightMatrix& like, int rows) {
  std::string why;
  if (!device_matmul_supports(like, &why))
    throw Error("Vulkan matmul: unsupported weights: " + why);
  DeviceMatrix d;
  d.rows = rows;
  d.cols = like.cols;
  if (like.format == WeightFormat::kGguf) {  // blocks as stored; the rewrite's arithmetic
    d.format = feature_masked("gguf-blocks") ? WeightFormat::kAffine : WeightFormat::kGguf;
    d.gguf_type = like.gguf_type;
    d.bits = gguf_affine_bits(like.gguf_type);
    d.group_size = gguf_affine_group_size(like.gguf_type);
    d.scale_type = gguf_affine_scale_type(like.gguf_type);
  } else {
    d.format = like.format;
    d.bits = like.bits;
    d.group_size = like.group_size;
    d.scale_type = like.scale_type;
  }
  return d;
}

}  // namespace

size_t device_matrix_bytes(const WeightMatrix& w) {
  const DeviceMatrix d = device_shape(w, w.rows);
  return size_t(w.rows) * (matrix_row_bytes(d) + 2 * matrix_meta_row_bytes(d));
}

size_t allocated_bytes(const DeviceMatrix& m) {
  return m.data.size() + (m.scales ? m.scales.size() : 0) + (m.biases ? m.biases.size() : 0);
}

DeviceMatrix create_matrix(Context& context, const WeightMatrix& like, int rows) {
  DeviceMatrix d = device_shape(like, rows);
  d.data = context.create_buffer(size_t(rows) * matrix_row_bytes(d));
  if (d.format == WeightFormat::kAffine) {
    const size_t meta = size_t(rows) * matrix_meta_row_bytes(d);
    d.scales = context.create_buffer(meta);
    d.biases = context.create_buffer(meta);
  }
  return d;
}

namespace {

// Rows of w, in d's format, copied to rows [first_row, first_row + w.rows) of d.
void upload_stored_rows(Context& context, const DeviceMatrix& d, int first_row,
                        const WeightMatrix& w) {
  const bool same_format = w.format == WeightFormat::kGguf
                               ? d.format == WeightFormat::kGguf && w.gguf_type == d.gguf_type
                               : w.format == d.format && w.bits == d.bits &&
                                     w.group_size == d.group_size &&
                                     (!w.quantized() || w.scale_type == d.scale_type);
  if (!same_format || w.cols != d.cols || first_row < 0 || first_row + w.rows > d.rows)
    throw Error("internal: Vulkan matrix rows of another format or shape");
  const size_t row = matrix_row_bytes(d), meta = matrix_meta_row_bytes(d);
  context.upload(d.data, size_t(first_row) * row, w.data, size_t(w.rows) * row);
  if (d.format == WeightFormat::kAffine) {
    context.upload(d.scales, size_t(first_row) * meta, w.scales, size_t(w.rows) * meta);
    context.upload(d.biases, size_t(first_row) * meta, w.biases, size_t(w.rows) * meta);
  }
}

// With "gguf-blocks" masked, GGUF rows are rewritten this many at a time, so the host copy
// stays small beside the matrix.
constexpr size_t kRewriteBytes = size_t(32) << 20;

}  // namespace

void upload_rows(Context& context, const DeviceMatrix& d, int first_row, const WeightMatrix& w) {
  std::string why;
  if (!device_matmul_supports(w, &why)) throw Error("Vulkan matmul: unsupported weights: " + why);
  if (w.format != WeightFormat::kGguf || d.format == WeightFormat::kGguf)
    return upload_stored_rows(context, d, first_row, w);
  const int step = int(std::max<size_t>(1, kRewriteBytes / std::max<size_t>(1, w.row_bytes())));
  for (int r0 = 0; r0 < w.rows; r0 += step) {
    const OwnedMatrix rows = gguf_to_affine(w.row_slice(r0, std::min(w.rows, r0 + step)));
    upload_stored_rows(context, d, first_row + r0, rows.view);
  }
}

DeviceMatrix upload_matrix(Context& context, const WeightMatrix& w) {
  DeviceMatrix d = create_matrix(context, w, w.rows);
  upload_rows(context, d, 0, w);
  return d;
}

void record_matmul(CommandRecorder& recorder, const DeviceMatrix& w, const Buffer& x, int T,
                   const Buffer& y) {
  if (T <= 0 || w.rows <= 0) return;
  Context& context = recorder.context();
  const DeviceInfo& device = context.device_info();
  const bool affine = w.format == WeightFormat::kAffine;
  const bool gguf = w.format == WeightFormat::kGguf;
  const size_t capacity = window_capacity(context);
  const size_t row = matrix_row_bytes(w);
  const size_t scale_bytes = affine ? scalar_size(w.scale_type) : 0;
  const size_t meta_row = matrix_meta_row_bytes(w);
  const size_t x_row = size_t(w.cols) * 4, y_row = size_t(w.rows) * 4;

  // Rows per dispatch: the weights (and scales) of the rows must fit one binding each.
  const size_t group_rows = matmul_rows_per_group(w);
  size_t rows_per = std::min<size_t>(w.rows, size_t(device.max_workgroup_count[0]) * group_rows);
  rows_per = std::min(rows_per, (capacity - (gguf ? kBlockWindowSlack : 0)) / row);
  if (affine) rows_per = std::min(rows_per, capacity / meta_row);
  // Tokens per dispatch: their inputs and outputs must fit one binding each.
  size_t tokens_per = std::min<size_t>(T, device.max_workgroup_count[1]);
  tokens_per = std::min({tokens_per, capacity / x_row, capacity / y_row});
  if (rows_per == 0 || tokens_per == 0)
    throw Error("Vulkan matmul: a " + std::to_string(w.rows) + "x" + std::to_string(w.cols) +
                " matrix has rows wider than " + device.name + " can bind");

  const char* shader = affine ? "matmul_affine" : gguf ? "matmul_gguf" : "matmul_float";
  const uint32_t push_bytes = affine ? sizeof(AffinePush)
                              : gguf ? sizeof(GgufPush)
                                     : sizeof(FloatPush);
  const Pipeline& pipeline = context.pipelines().get(
      {fma_shader(context, shader), affine ? 5u : 3u, push_bytes, matmul_specialization(w)});

  for (size_t t0 = 0; t0 < size_t(T); t0 += tokens_per) {
    const size_t nt = std::min(tokens_per, size_t(T) - t0);
    const Window in = window(context, x, t0 * x_row, (t0 + nt) * x_row, 4, Access::kRead);
    for (size_t r0 = 0; r0 < size_t(w.rows); r0 += rows_per) {
      const size_t nr = std::min(rows_per, size_t(w.rows) - r0);
      // The outputs of these rows for these tokens: a strided block of y.
      const Window out = window(context, y, (t0 * w.rows + r0) * 4,
                                ((t0 + nt - 1) * w.rows + r0 + nr) * 4, 4, Access::kWrite);
      if (gguf) {
        const BlockWindow blocks = block_window(context, w.data, r0 * row, (r0 + nr) * row);
        const GgufPush push{uint32_t(nr), uint32_t(w.cols), blocks.byte_base, uint32_t(row),
                            in.base,      out.base,         uint32_t(w.rows)};
        const Binding bindings[] = {blocks.binding, in.binding, out.binding};
        recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(nr), uint32_t(nt));
        continue;
      }
      const Window weights = window(context, w.data, r0 * row, (r0 + nr) * row,
                                    weight_element_bytes(w), Access::kRead);
      if (!affine) {
        const FloatPush push{uint32_t(nr), uint32_t(w.cols), weights.base,
                             in.base,      out.base,         uint32_t(w.rows)};
        const Binding bindings[] = {weights.binding, in.binding, out.binding};
        recorder.dispatch(pipeline, bindings, &push, sizeof push,
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
      recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(nr), uint32_t(nt));
    }
  }
}

}  // namespace qmlx::vulkan
