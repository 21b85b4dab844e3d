#include "backend/vulkan/rms_norm.h"

#include <algorithm>

#include "backend/vulkan/binding_window.h"
#include "backend/vulkan/fma_mode.h"
#include "base/error.h"

namespace qmlx::vulkan {
namespace {

struct Push {
  uint32_t n;
  float eps;
  uint32_t x_base;
  uint32_t y_base;
};

}  // namespace

void record_rms_norm(CommandRecorder& recorder, const Buffer& x, const Buffer& w, const Buffer& y,
                     int rows, int n, float eps, bool weight_plus_one) {
  if (rows <= 0 || n <= 0) return;
  Context& context = recorder.context();
  const size_t row_bytes = size_t(n) * 4;
  const size_t capacity = window_capacity(context);
  const size_t per_dispatch =
      std::min<size_t>(capacity / row_bytes, context.device_info().max_workgroup_count[0]);
  if (per_dispatch == 0)
    throw Error("rms_norm: a row of " + std::to_string(n) +
                " floats is "
                "wider than the device can bind");
  const Pipeline& pipeline = context.pipelines().get(
      {fma_shader(context, "rms_norm"), 3, sizeof(Push), {weight_plus_one ? 1u : 0u}});
  const Window weight = window(context, w, 0, row_bytes, 4, Access::kRead);
  // In place (y == x), the one binding is read and written by the same invocations.
  const bool in_place = &x == &y;
  for (size_t r0 = 0; r0 < size_t(rows); r0 += per_dispatch) {
    const size_t count = std::min(per_dispatch, size_t(rows) - r0);
    const size_t begin = r0 * row_bytes, end = (r0 + count) * row_bytes;
    const Window in =
        window(context, x, begin, end, 4, in_place ? Access::kReadWrite : Access::kRead);
    const Window out = window(context, y, begin, end, 4, Access::kWrite);
    const Push push{uint32_t(n), eps, in.base, out.base};
    const Binding bindings[] = {in.binding, weight.binding, out.binding};
    recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(count));
  }
}

}  // namespace qmlx::vulkan
