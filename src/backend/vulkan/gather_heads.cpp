#include "backend/vulkan/gather_heads.h"

#include <algorithm>

#include "backend/vulkan/binding_window.h"
#include "base/error.h"

namespace qmlx::vulkan {
namespace {

struct Push {
  uint32_t heads, n, in_base, order_base, out_base;
};

}  // namespace

void record_gather_heads(CommandRecorder& recorder, const Buffer& in, const Buffer& order, int rows,
                         int heads, int n, const Buffer& out) {
  if (rows <= 0 || heads <= 0 || n <= 0) return;
  Context& context = recorder.context();
  const DeviceInfo& device = context.device_info();
  const size_t row_bytes = size_t(heads) * n * 4;
  const size_t rows_per =
      std::min<size_t>(window_capacity(context) / row_bytes, device.max_workgroup_count[1]);
  if (rows_per == 0 || uint32_t(heads) > device.max_workgroup_count[0])
    throw Error("gather_heads: a row of " + std::to_string(heads) + " heads of " +
                std::to_string(n) + " is wider than the device can bind");
  const Pipeline& pipeline = context.pipelines().get({"gather_heads", 3, sizeof(Push), {}});
  const Window indexes = window(context, order, 0, size_t(heads) * 4, 4, Access::kRead);
  for (size_t r0 = 0; r0 < size_t(rows); r0 += rows_per) {
    const size_t count = std::min(rows_per, size_t(rows) - r0);
    const Window from =
        window(context, in, r0 * row_bytes, (r0 + count) * row_bytes, 4, Access::kRead);
    const Window to =
        window(context, out, r0 * row_bytes, (r0 + count) * row_bytes, 4, Access::kWrite);
    const Push push{uint32_t(heads), uint32_t(n), from.base, indexes.base, to.base};
    const Binding bindings[] = {from.binding, indexes.binding, to.binding};
    recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(heads), uint32_t(count));
  }
}

}  // namespace qmlx::vulkan
