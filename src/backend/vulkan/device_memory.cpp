#include "backend/vulkan/device_memory.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "base/error.h"

namespace qmlx::vulkan {

uint64_t usable_device_memory(const DeviceInfo& device) {
  const char* limit = std::getenv("QMLX_VULKAN_MEMORY_MB");
  if (limit == nullptr || *limit == '\0') return device.device_local_bytes;
  char* end = nullptr;
  const unsigned long long mb = std::strtoull(limit, &end, 10);
  if (*end != '\0' || mb == 0 || mb > (uint64_t(1) << 40))
    throw Error("QMLX_VULKAN_MEMORY_MB=" + std::string(limit) +
                ": give the device memory to use in MiB, a positive whole number");
  return std::min(device.device_local_bytes, uint64_t(mb) << 20);
}

}  // namespace qmlx::vulkan
