#include "backend/vulkan/copy.h"

#include <algorithm>
#include <chrono>

#include "backend/vulkan/binding_window.h"
#include "base/error.h"

namespace qmlx::vulkan {
namespace {

struct Push {
  uint32_t count, src_base, dst_base;
};

// Enough workgroups to fill any current GPU; the grid-stride loop covers the rest.
constexpr size_t kMaxGroups = 4096;

}  // namespace

void record_copy(CommandRecorder& recorder, const Buffer& src, size_t src_offset, const Buffer& dst,
                 size_t dst_offset, size_t bytes) {
  if (bytes % 16 || src_offset % 16 || dst_offset % 16)
    throw Error("internal: Vulkan copy of unaligned bytes");
  Context& context = recorder.context();
  const Pipeline& pipeline = context.pipelines().get({"copy", 2, sizeof(Push), {}});
  const size_t per_dispatch = window_capacity(context) & ~size_t(15);
  for (size_t done = 0; done < bytes; done += per_dispatch) {
    const size_t n = std::min(per_dispatch, bytes - done);
    const Window from =
        window(context, src, src_offset + done, src_offset + done + n, 16, Access::kRead);
    const Window to =
        window(context, dst, dst_offset + done, dst_offset + done + n, 16, Access::kWrite);
    const Push push{uint32_t(n / 16), from.base, to.base};
    const size_t groups = std::min(
        {(n / 16 + 63) / 64, kMaxGroups, size_t(context.device_info().max_workgroup_count[0])});
    const Binding bindings[] = {from.binding, to.binding};
    recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(groups));
  }
}

Bandwidth measure_copy_bandwidth(Context& context, size_t bytes, int repetitions) {
  bytes &= ~size_t(15);
  Buffer src = context.create_buffer(bytes), dst = context.create_buffer(bytes);
  {
    // Compile the pipeline and touch both buffers before the clock starts.
    CommandRecorder warm(context);
    record_copy(warm, src, 0, dst, 0, bytes);
    warm.submit_and_wait();
  }
  CommandRecorder recorder(context);
  for (int i = 0; i < repetitions; ++i) record_copy(recorder, src, 0, dst, 0, bytes);
  const auto start = std::chrono::steady_clock::now();
  recorder.submit_and_wait();
  Bandwidth b;
  b.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  b.bytes_per_second = b.seconds > 0 ? 2.0 * double(bytes) * repetitions / b.seconds : 0;
  return b;
}

}  // namespace qmlx::vulkan
