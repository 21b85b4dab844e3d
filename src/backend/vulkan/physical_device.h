// Reading a VkPhysicalDevice's properties, limits and features into a DeviceInfo, chaining only
// the structures the device's Vulkan version or extensions define (anything else is invalid
// usage the validation layer reports).
#pragma once

#include <vector>

#include "backend/vulkan/device_info.h"
#include "backend/vulkan/instance.h"

namespace qmlx::vulkan {

std::vector<VkPhysicalDevice> physical_devices(const Instance& instance);

// Everything but `index` comes from the device; can_run is judged (judge_device).
DeviceInfo describe_physical_device(const Instance& instance, VkPhysicalDevice device, int index);

// Names of the device's extensions.
std::vector<std::string> device_extensions(const Instance& instance, VkPhysicalDevice device);

}  // namespace qmlx::vulkan
