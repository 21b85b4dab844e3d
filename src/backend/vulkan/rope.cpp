#include "backend/vulkan/rope.h"

#include <algorithm>
#include <vector>

#include "backend/vulkan/binding_window.h"
#include "backend/vulkan/fma_mode.h"
#include "base/error.h"
#include "kernels/rope.h"

namespace qmlx::vulkan {
namespace {

struct Push {
  uint32_t heads, head_dim, half, x_base, position_base;
};

}  // namespace

RopeTable upload_rope_table(Context& context, int64_t positions, int rot_dim, double theta) {
  const size_t half = size_t(rot_dim / 2), row_bytes = 2 * half * 4;
  if (positions <= 0 || half == 0) throw Error("rope table: no positions or no rotary dims");
  if (size_t(positions) * row_bytes > window_capacity(context))
    throw Error("rope table: " + std::to_string(positions) +
                " positions are more than one binding can hold on " + context.device_info().name);
  std::vector<float> table(size_t(positions) * 2 * half);
  for (int64_t p = 0; p < positions; ++p) {
    const RopeAngles a = rope_angles(p, rot_dim, theta);
    float* row = table.data() + size_t(p) * 2 * half;
    std::copy(a.cos.begin(), a.cos.end(), row);
    std::copy(a.sin.begin(), a.sin.end(), row + half);
  }
  RopeTable t;
  t.data = context.create_buffer(table.size() * 4);
  context.upload(t.data, 0, table.data(), table.size() * 4);
  t.positions = positions;
  t.rot_dim = rot_dim;
  return t;
}

void record_rope(CommandRecorder& recorder, const Buffer& x, const Buffer& positions,
                 const RopeTable& table, int rows, int heads, int head_dim,
                 const Buffer* own_angles) {
  if (rows <= 0 || heads <= 0 || table.rot_dim < 2) return;
  if (table.rot_dim > head_dim) throw Error("rope: rot_dim is larger than the head");
  Context& context = recorder.context();
  const size_t row_bytes = size_t(heads) * head_dim * 4;
  const size_t per_dispatch = std::min<size_t>(window_capacity(context) / row_bytes,
                                               context.device_info().max_workgroup_count[0]);
  if (per_dispatch == 0) throw Error("rope: a row is wider than the device can bind");
  const Pipeline& pipeline =
      context.pipelines().get({fma_shader(context, "rope"), 4, sizeof(Push), {}});
  const Window angles =
      window(context, table.data, 0, size_t(table.positions) * table.rot_dim * 4, 4, Access::kRead);
  // Without angles of its own the call binds the table there too (no row reads it).
  const Window own =
      own_angles ? window(context, *own_angles, 0, own_angles->size(), 4, Access::kRead) : angles;
  for (size_t r0 = 0; r0 < size_t(rows); r0 += per_dispatch) {
    const size_t count = std::min(per_dispatch, size_t(rows) - r0);
    const Window rows_x =
        window(context, x, r0 * row_bytes, (r0 + count) * row_bytes, 4, Access::kReadWrite);
    const Window rows_pos = window(context, positions, r0 * 4, (r0 + count) * 4, 4, Access::kRead);
    const Push push{uint32_t(heads), uint32_t(head_dim), uint32_t(table.rot_dim / 2), rows_x.base,
                    rows_pos.base};
    const Binding bindings[] = {rows_x.binding, rows_pos.binding, angles.binding, own.binding};
    recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(count));
  }
}

}  // namespace qmlx::vulkan
