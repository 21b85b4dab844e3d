#include "backend/vulkan/bias_rows.h"

#include <algorithm>

#include "backend/vulkan/binding_window.h"
#include "base/error.h"

namespace qmlx::vulkan {
namespace {

struct Push {
  uint32_t rows, n, y_base;
};

}  // namespace

void record_bias_rows(CommandRecorder& recorder, const Buffer& y, const Buffer& bias, int rows,
                      int n) {
  if (rows <= 0 || n <= 0) return;
  Context& context = recorder.context();
  const size_t row_bytes = size_t(n) * 4;
  const DeviceInfo& info = context.device_info();
  const size_t per_dispatch =
      std::min<size_t>(window_capacity(context) / row_bytes, info.max_workgroup_count[1]);
  if (per_dispatch == 0)
    throw Error("bias_rows: a row of " + std::to_string(n) +
                " floats is wider than the device can bind");
  const Pipeline& pipeline = context.pipelines().get({"bias_rows", 2, sizeof(Push), {}});
  const Window b = window(context, bias, 0, row_bytes, 4, Access::kRead);
  const uint32_t groups_x =
      uint32_t(std::min<size_t>((size_t(n) + 63) / 64, info.max_workgroup_count[0]));
  for (size_t r0 = 0; r0 < size_t(rows); r0 += per_dispatch) {
    const size_t count = std::min(per_dispatch, size_t(rows) - r0);
    const Window target =
        window(context, y, r0 * row_bytes, (r0 + count) * row_bytes, 4, Access::kReadWrite);
    const Push push{uint32_t(count), uint32_t(n), target.base};
    const Binding bindings[] = {target.binding, b.binding};
    recorder.dispatch(pipeline, bindings, &push, sizeof push, groups_x, uint32_t(count));
  }
}

}  // namespace qmlx::vulkan
