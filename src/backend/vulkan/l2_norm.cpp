#include "backend/vulkan/l2_norm.h"

#include <algorithm>

#include "backend/vulkan/binding_window.h"
#include "backend/vulkan/fma_mode.h"
#include "base/error.h"

namespace qmlx::vulkan {
namespace {

struct Push {
  uint32_t n, row_stride, x_base;
  float eps, scale;
};

}  // namespace

void record_l2_norm(CommandRecorder& recorder, const Buffer& x, int rows, size_t row_stride,
                    size_t offset, int heads, int n, float eps, float scale) {
  if (rows <= 0 || heads <= 0 || n <= 0) return;
  Context& context = recorder.context();
  const DeviceInfo& device = context.device_info();
  const size_t row_bytes = row_stride * 4;
  const size_t per_dispatch =
      std::min<size_t>(window_capacity(context) / row_bytes, device.max_workgroup_count[1]);
  if (per_dispatch == 0 || uint32_t(heads) > device.max_workgroup_count[0])
    throw Error("l2_norm: a row is wider than the device can bind");
  const Pipeline& pipeline =
      context.pipelines().get({fma_shader(context, "l2_norm"), 1, sizeof(Push), {}});
  for (size_t r0 = 0; r0 < size_t(rows); r0 += per_dispatch) {
    const size_t count = std::min(per_dispatch, size_t(rows) - r0);
    const size_t begin = (r0 * row_stride + offset) * 4;
    const size_t end = begin + ((count - 1) * row_stride + size_t(heads) * n) * 4;
    const Window heads_window = window(context, x, begin, end, 4, Access::kReadWrite);
    const Push push{uint32_t(n), uint32_t(row_stride), heads_window.base, eps, scale};
    const Binding bindings[] = {heads_window.binding};
    recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(heads), uint32_t(count));
  }
}

}  // namespace qmlx::vulkan
