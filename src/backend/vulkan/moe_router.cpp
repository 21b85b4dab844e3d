#include "backend/vulkan/moe_router.h"

#include <algorithm>

#include "backend/vulkan/binding_window.h"
#include "base/error.h"

namespace qmlx::vulkan {
namespace {

struct Push {
  uint32_t experts, top_k, renormalize, logit_base, id_base, weight_base;
};

}  // namespace

void record_moe_route(CommandRecorder& recorder, const Buffer& logits, int T, int E, int k,
                      bool renormalize, const Buffer& ids, const Buffer& weights) {
  if (T <= 0) return;
  if (E <= 0 || E > kMaxRouterExperts || k <= 0 || k > E || k > kMaxRouterTopK)
    throw Error("Vulkan MoE router: top " + std::to_string(k) + " of " + std::to_string(E) +
                " experts; the shader takes 1 <= k <= E, k <= " + std::to_string(kMaxRouterTopK) +
                ", E <= " + std::to_string(kMaxRouterExperts));
  Context& context = recorder.context();
  const size_t logit_row = size_t(E) * 4, route_row = size_t(k) * 4;
  const size_t per_dispatch =
      std::min({size_t(context.device_info().max_workgroup_count[0]),
                window_capacity(context) / logit_row, window_capacity(context) / route_row});
  const Pipeline& pipeline = context.pipelines().get({"moe_router", 3, sizeof(Push), {}});
  for (size_t t0 = 0; t0 < size_t(T); t0 += per_dispatch) {
    const size_t n = std::min(per_dispatch, size_t(T) - t0);
    const Window in =
        window(context, logits, t0 * logit_row, (t0 + n) * logit_row, 4, Access::kRead);
    const Window id = window(context, ids, t0 * route_row, (t0 + n) * route_row, 4, Access::kWrite);
    const Window weight =
        window(context, weights, t0 * route_row, (t0 + n) * route_row, 4, Access::kWrite);
    const Push push{uint32_t(E), uint32_t(k), renormalize ? 1u : 0u, in.base, id.base, weight.base};
    const Binding bindings[] = {in.binding, id.binding, weight.binding};
    recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(n));
  }
}

}  // namespace qmlx::vulkan
