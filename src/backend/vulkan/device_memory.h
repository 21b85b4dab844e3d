// The device memory qmlx plans with: the device's DEVICE_LOCAL heaps, or less when
// $QMLX_VULKAN_MEMORY_MB says so (a GPU shared with a desktop or another program; tests that
// need a small device). Whether the weights fit (model/vulkan/device_weights.cpp) and how much
// sequence state the scheduler admits on the device (server/scheduling/batch_memory.h) are
// both judged against it.
#pragma once

#include <cstdint>

#include "backend/vulkan/device_info.h"

namespace qmlx::vulkan {

// Throws qmlx::Error for a $QMLX_VULKAN_MEMORY_MB that is not a positive whole number.
uint64_t usable_device_memory(const DeviceInfo& device);

}  // namespace qmlx::vulkan
