#include "backend/vulkan/moe_combine.h"

#include <algorithm>

#include "backend/vulkan/binding_window.h"
#include "backend/vulkan/fma_mode.h"
#include "backend/vulkan/moe_router.h"
#include "base/error.h"

namespace qmlx::vulkan {
namespace {

enum class Op : uint32_t { kRouted = 0, kShared = 1 };

struct Push {
  uint32_t routes, cols, row_base, id_base, weight_base, out_base;
};

// Token t's rows are routes * H floats at `rows` and H at `out`; its route ids and weights
// are `routes` at `ids` and `weights` (the shared add has no ids: it binds the weights twice).
void record(CommandRecorder& recorder, Op op, const Buffer& rows, const Buffer* ids,
            const Buffer& weights, int T, int routes, int H, const Buffer& out) {
  if (T <= 0 || H <= 0) return;
  Context& context = recorder.context();
  const DeviceInfo& device = context.device_info();
  const size_t row_bytes = size_t(routes) * H * 4, out_bytes = size_t(H) * 4;
  const size_t route_bytes = size_t(routes) * 4;
  const size_t tokens_per =
      std::min({size_t(device.max_workgroup_count[1]), window_capacity(context) / row_bytes});
  if (tokens_per == 0) throw Error("Vulkan MoE combine: rows wider than the device can bind");
  const uint32_t groups =
      uint32_t(std::min<size_t>((size_t(H) + 63) / 64, device.max_workgroup_count[0]));
  const Pipeline& pipeline = context.pipelines().get(
      {fma_shader(context, "moe_combine"), 4, sizeof(Push), {uint32_t(op)}});
  const Access out_access = op == Op::kRouted ? Access::kWrite : Access::kReadWrite;
  for (size_t t0 = 0; t0 < size_t(T); t0 += tokens_per) {
    const size_t n = std::min(tokens_per, size_t(T) - t0);
    const Window in = window(context, rows, t0 * row_bytes, (t0 + n) * row_bytes, 4, Access::kRead);
    const Window w =
        window(context, weights, t0 * route_bytes, (t0 + n) * route_bytes, 4, Access::kRead);
    const Window id = ids != nullptr ? window(context, *ids, t0 * route_bytes,
                                              (t0 + n) * route_bytes, 4, Access::kRead)
                                     : w;
    const Window target = window(context, out, t0 * out_bytes, (t0 + n) * out_bytes, 4, out_access);
    const Push push{uint32_t(routes), uint32_t(H), in.base, id.base, w.base, target.base};
    const Binding bindings[] = {in.binding, id.binding, w.binding, target.binding};
    recorder.dispatch(pipeline, bindings, &push, sizeof push, groups, uint32_t(n));
  }
}

}  // namespace

void record_moe_combine(CommandRecorder& recorder, const Buffer& routed, const Buffer& ids,
                        const Buffer& weights, int T, int k, int H, const Buffer& out) {
  if (k <= 0 || k > kMaxRouterTopK)
    throw Error("Vulkan MoE combine: " + std::to_string(k) + " routes per token; at most " +
                std::to_string(kMaxRouterTopK));
  record(recorder, Op::kRouted, routed, &ids, weights, T, k, H, out);
}

void record_shared_expert_add(CommandRecorder& recorder, const Buffer& out, const Buffer& shared,
                              const Buffer& gate, int T, int H) {
  record(recorder, Op::kShared, shared, nullptr, gate, T, 1, H, out);
}

}  // namespace qmlx::vulkan
