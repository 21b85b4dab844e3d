#include "backend/vulkan/layer_norm.h"

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

void record_layer_norm(CommandRecorder& recorder, const Buffer& x, const Buffer& w, const Buffer& b,
                       const Buffer& y, int rows, int n, float eps) {
  if (rows <= 0 || n <= 0) return;
  if (&x == &y) throw Error("layer_norm: the output must not be the input");
  Context& context = recorder.context();
  const size_t row_bytes = size_t(n) * 4;
  const size_t per_dispatch = std::min<size_t>(window_capacity(context) / row_bytes,
                                               context.device_info().max_workgroup_count[0]);
  if (per_dispatch == 0)
    throw Error("layer_norm: a row of " + std::to_string(n) +
                " floats is wider than the device can bind");
  const Pipeline& pipeline =
      context.pipelines().get({fma_shader(context, "layer_norm"), 4, sizeof(Push), {}});
  const Window weight = window(context, w, 0, row_bytes, 4, Access::kRead);
  const Window bias = window(context, b, 0, row_bytes, 4, Access::kRead);
  for (size_t r0 = 0; r0 < size_t(rows); r0 += per_dispatch) {
    const size_t count = std::min(per_dispatch, size_t(rows) - r0);
    const size_t begin = r0 * row_bytes, end = (r0 + count) * row_bytes;
    const Window in = window(context, x, begin, end, 4, Access::kRead);
    const Window out = window(context, y, begin, end, 4, Access::kWrite);
    const Push push{uint32_t(n), eps, in.base, out.base};
    const Binding bindings[] = {in.binding, weight.binding, bias.binding, out.binding};
    recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(count));
  }
}

}  // namespace qmlx::vulkan
