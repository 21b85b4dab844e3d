#include "backend/vulkan/rms_norm_gated.h"

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
};

}  // namespace

void record_rms_norm_gated(CommandRecorder& recorder, const Buffer& x, const Buffer& z,
                           const Buffer& w, const Buffer& y, int rows, int n, float eps) {
  if (rows <= 0 || n <= 0) return;
  Context& context = recorder.context();
  const size_t row_bytes = size_t(n) * 4;
  const size_t per_dispatch = std::min<size_t>(window_capacity(context) / row_bytes,
                                               context.device_info().max_workgroup_count[0]);
  if (per_dispatch == 0) throw Error("rms_norm_gated: a row is wider than the device can bind");
  const Pipeline& pipeline =
      context.pipelines().get({fma_shader(context, "rms_norm_gated"), 4, sizeof(Push), {}});
  const Window weight = window(context, w, 0, row_bytes, 4, Access::kRead);
  const bool in_place = &x == &y;
  for (size_t r0 = 0; r0 < size_t(rows); r0 += per_dispatch) {
    const size_t count = std::min(per_dispatch, size_t(rows) - r0);
    const size_t begin = r0 * row_bytes, end = (r0 + count) * row_bytes;
    // x, z and y windows start at the same byte, so one base serves all three.
    const Window in =
        window(context, x, begin, end, 4, in_place ? Access::kReadWrite : Access::kRead);
    const Window gate = window(context, z, begin, end, 4, Access::kRead);
    const Window out = window(context, y, begin, end, 4, Access::kWrite);
    const Push push{uint32_t(n), eps, in.base};
    const Binding bindings[] = {in.binding, gate.binding, weight.binding, out.binding};
    recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(count));
  }
}

}  // namespace qmlx::vulkan
