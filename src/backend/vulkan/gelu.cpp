#include "backend/vulkan/gelu.h"

#include <algorithm>

#include "backend/vulkan/binding_window.h"
#include "backend/vulkan/fma_mode.h"

namespace qmlx::vulkan {
namespace {

struct Push {
  uint32_t count, a_base;
};

// Enough workgroups to fill any current GPU; the grid-stride loop covers the rest.
constexpr size_t kMaxGroups = 4096;

}  // namespace

void record_gelu(CommandRecorder& recorder, Gelu kind, const Buffer& a, size_t n) {
  if (n == 0) return;
  Context& context = recorder.context();
  const Pipeline& pipeline =
      context.pipelines().get({fma_shader(context, "gelu"), 1, sizeof(Push), {uint32_t(kind)}});
  const size_t per_dispatch = window_capacity(context) / 4;
  for (size_t first = 0; first < n; first += per_dispatch) {
    const size_t count = std::min(per_dispatch, n - first);
    const Window target = window(context, a, first * 4, (first + count) * 4, 4, Access::kReadWrite);
    const Push push{uint32_t(count), target.base};
    const size_t groups = std::min(
        {(count + 63) / 64, kMaxGroups, size_t(context.device_info().max_workgroup_count[0])});
    const Binding bindings[] = {target.binding};
    recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(groups));
  }
}

}  // namespace qmlx::vulkan
