#include "backend/vulkan/binding_window.h"

#include <algorithm>

#include "base/error.h"

namespace qmlx::vulkan {

size_t window_capacity(const Context& context) {
  const DeviceInfo& d = context.device_info();
  return size_t(d.max_storage_buffer_range) - d.min_storage_buffer_offset_alignment;
}

Window window(const Context& context, const Buffer& buffer, size_t begin, size_t end,
              size_t element_bytes, Access access) {
  const DeviceInfo& d = context.device_info();
  const size_t start =
      begin / d.min_storage_buffer_offset_alignment * d.min_storage_buffer_offset_alignment;
  // Storage buffer ranges are whole 4-byte words; buffers are allocated in words too.
  const size_t stop = std::min(buffer.size(), (end + 3) & ~size_t(3));
  if (end > buffer.size() || begin > end)
    throw Error("internal: Vulkan window past the end of its buffer");
  if (stop - start > d.max_storage_buffer_range)
    throw Error("internal: Vulkan window of " + std::to_string(stop - start) +
                " bytes exceeds the device's binding range");
  Window w;
  w.binding = {&buffer, start, std::max<size_t>(4, stop - start), access};
  w.base = uint32_t((begin - start) / element_bytes);
  return w;
}

}  // namespace qmlx::vulkan
