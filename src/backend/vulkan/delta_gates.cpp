#include "backend/vulkan/delta_gates.h"

#include <algorithm>

#include "backend/vulkan/binding_window.h"

namespace qmlx::vulkan {
namespace {

struct Push {
  uint32_t count, heads, b_base, a_base, A_base, dt_base;
};

// Enough workgroups to fill any current GPU; the grid-stride loop covers the rest.
constexpr size_t kMaxGroups = 4096;

}  // namespace

void record_delta_gates(CommandRecorder& recorder, const Buffer& b, const Buffer& a,
                        const Buffer& A, const Buffer& dt_bias, int T, int Hv) {
  if (T <= 0 || Hv <= 0) return;
  Context& context = recorder.context();
  const Pipeline& pipeline = context.pipelines().get({"delta_gates", 4, sizeof(Push), {}});
  const size_t head_bytes = size_t(Hv) * 4;
  // Whole rows per dispatch, so element i's head is i % Hv in every piece.
  const size_t rows_per = window_capacity(context) / head_bytes;
  const Window decay = window(context, A, 0, head_bytes, 4, Access::kRead);
  const Window bias = window(context, dt_bias, 0, head_bytes, 4, Access::kRead);
  for (size_t t0 = 0; t0 < size_t(T); t0 += rows_per) {
    const size_t n = std::min(rows_per, size_t(T) - t0) * Hv;
    const Window beta =
        window(context, b, t0 * head_bytes, t0 * head_bytes + n * 4, 4, Access::kReadWrite);
    const Window g =
        window(context, a, t0 * head_bytes, t0 * head_bytes + n * 4, 4, Access::kReadWrite);
    const Push push{uint32_t(n), uint32_t(Hv), beta.base, g.base, decay.base, bias.base};
    const size_t groups =
        std::min({(n + 63) / 64, kMaxGroups, size_t(context.device_info().max_workgroup_count[0])});
    const Binding bindings[] = {beta.binding, g.binding, decay.binding, bias.binding};
    recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(groups));
  }
}

}  // namespace qmlx::vulkan
