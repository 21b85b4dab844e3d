#include "backend/vulkan/matmul_by_expert.h"

#include <algorithm>

#include "backend/vulkan/binding_window.h"
#include "backend/vulkan/fma_mode.h"
#include "backend/vulkan/matmul_layout.h"
#include "base/error.h"

namespace qmlx::vulkan {
namespace {

struct FloatPush {
  uint32_t rows, cols, w_base, expert_stride, expert_first, expert_count, id_base, x_base, x_routes,
      y_base;
};

struct AffinePush {
  uint32_t rows, cols, code_base, code_stride, scale_base, bias_base, scale_stride, expert_first,
      expert_count, id_base, x_base, x_routes, y_base;
};

struct GgufPush {
  uint32_t rows, cols, byte_base, row_bytes, expert_first, expert_count, id_base, x_base, x_routes,
      y_base;
};

}  // namespace

DeviceExperts upload_experts(Context& context, std::span<const WeightMatrix* const> experts) {
  if (experts.empty()) throw Error("internal: Vulkan experts: none to upload");
  const WeightMatrix& first = *experts.front();
  DeviceExperts d;
  d.experts = int(experts.size());
  d.rows = first.rows;
  d.stacked = create_matrix(context, first, d.experts * d.rows);
  for (size_t e = 0; e < experts.size(); ++e) {
    if (experts[e]->rows != d.rows)
      throw Error("Vulkan experts: expert " + std::to_string(e) + " has " +
                  std::to_string(experts[e]->rows) + " rows, expert 0 " + std::to_string(d.rows));
    upload_rows(context, d.stacked, int(e) * d.rows, *experts[e]);
  }
  return d;
}

void record_matmul_by_expert(CommandRecorder& recorder, const DeviceExperts& w, const Buffer& x,
                             ExpertInput input, const Buffer& ids, int T, int k, const Buffer& y) {
  if (T <= 0 || k <= 0 || w.experts <= 0 || w.rows <= 0) return;
  Context& context = recorder.context();
  const DeviceInfo& device = context.device_info();
  const DeviceMatrix& m = w.stacked;
  const bool affine = m.format == WeightFormat::kAffine;
  const bool gguf = m.format == WeightFormat::kGguf;
  const size_t capacity = window_capacity(context);

  // Experts per dispatch: their weights (and scales) must fit one binding each.
  const size_t expert_bytes = size_t(w.rows) * matrix_row_bytes(m);
  const size_t expert_meta = size_t(w.rows) * matrix_meta_row_bytes(m);
  size_t experts_per =
      std::min<size_t>(w.experts, (capacity - (gguf ? kBlockWindowSlack : 0)) / expert_bytes);
  if (affine) experts_per = std::min(experts_per, capacity / expert_meta);
  // Tokens per dispatch: their routes are the dispatch's y workgroups, and their inputs, ids
  // and outputs must fit one binding each.
  const size_t x_rows_per_token = input == ExpertInput::kToken ? 1 : size_t(k);
  const size_t x_token = x_rows_per_token * m.cols * 4, y_token = size_t(k) * w.rows * 4;
  const size_t id_token = size_t(k) * 4;
  const size_t tokens_per = std::min({size_t(T), size_t(device.max_workgroup_count[1]) / k,
                                      capacity / x_token, capacity / y_token, capacity / id_token});
  const size_t group_rows = matmul_rows_per_group(m);
  const size_t groups_x = (size_t(w.rows) + group_rows - 1) / group_rows;
  if (experts_per == 0 || tokens_per == 0 || groups_x > device.max_workgroup_count[0])
    throw Error("Vulkan matmul by expert: one expert's " + std::to_string(w.rows) + "x" +
                std::to_string(m.cols) + " matrix, or one token's " + std::to_string(k) +
                " routes, exceed what " + device.name + " can bind or dispatch at once");

  const std::string shader = affine ? "matmul_by_expert_affine"
                             : gguf ? "matmul_by_expert_gguf"
                                    : "matmul_by_expert_float";
  const uint32_t push_bytes = affine ? sizeof(AffinePush)
                              : gguf ? sizeof(GgufPush)
                                     : sizeof(FloatPush);
  const Pipeline& pipeline = context.pipelines().get(
      {fma_shader(context, shader), affine ? 6u : 4u, push_bytes, matmul_specialization(m)});
  const uint32_t x_routes = input == ExpertInput::kToken ? uint32_t(k) : 1u;
  const size_t scale_bytes = affine ? scalar_size(m.scale_type) : 0;

  for (size_t t0 = 0; t0 < size_t(T); t0 += tokens_per) {
    const size_t nt = std::min(tokens_per, size_t(T) - t0);
    const Window in = window(context, x, t0 * x_token, (t0 + nt) * x_token, 4, Access::kRead);
    const Window id = window(context, ids, t0 * id_token, (t0 + nt) * id_token, 4, Access::kRead);
    const Window out = window(context, y, t0 * y_token, (t0 + nt) * y_token, 4, Access::kWrite);
    for (size_t e0 = 0; e0 < size_t(w.experts); e0 += experts_per) {
      const size_t ne = std::min(experts_per, size_t(w.experts) - e0);
      const uint32_t groups_y = uint32_t(nt * k);
      if (gguf) {
        const BlockWindow blocks =
            block_window(context, m.data, e0 * expert_bytes, (e0 + ne) * expert_bytes);
        const GgufPush push{
            uint32_t(w.rows), uint32_t(m.cols), blocks.byte_base, uint32_t(matrix_row_bytes(m)),
            uint32_t(e0),     uint32_t(ne),     id.base,          in.base,
            x_routes,         out.base};
        const Binding bindings[] = {blocks.binding, in.binding, out.binding, id.binding};
        recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(groups_x), groups_y);
        continue;
      }
      const Window weights = window(context, m.data, e0 * expert_bytes, (e0 + ne) * expert_bytes,
                                    weight_element_bytes(m), Access::kRead);
      if (!affine) {
        const FloatPush push{uint32_t(w.rows), uint32_t(m.cols),
                             weights.base,     uint32_t(expert_bytes / weight_element_bytes(m)),
                             uint32_t(e0),     uint32_t(ne),
                             id.base,          in.base,
                             x_routes,         out.base};
        const Binding bindings[] = {weights.binding, in.binding, out.binding, id.binding};
        recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(groups_x), groups_y);
        continue;
      }
      const Window scales = window(context, m.scales, e0 * expert_meta, (e0 + ne) * expert_meta,
                                   scale_bytes, Access::kRead);
      const Window biases = window(context, m.biases, e0 * expert_meta, (e0 + ne) * expert_meta,
                                   scale_bytes, Access::kRead);
      const AffinePush push{uint32_t(w.rows),
                            uint32_t(m.cols),
                            weights.base,
                            uint32_t(expert_bytes / 4),
                            scales.base,
                            biases.base,
                            uint32_t(expert_meta / scale_bytes),
                            uint32_t(e0),
                            uint32_t(ne),
                            id.base,
                            in.base,
                            x_routes,
                            out.base};
      const Binding bindings[] = {weights.binding, scales.binding, biases.binding,
                                  in.binding,      out.binding,    id.binding};
      recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(groups_x), groups_y);
    }
  }
}

}  // namespace qmlx::vulkan
