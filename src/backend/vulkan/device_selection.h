// Choosing a Vulkan device from a --device value: "vulkan" takes the first discrete GPU that can
// run the backend, else the first integrated one, else any other (a CPU implementation such as
// lavapipe last); "vulkan:N" takes device N of `qmlx devices`. A choice that cannot be made is
// a qmlx::Error listing what was found.
#pragma once

#include <string>
#include <string_view>

#include "backend/vulkan/device_probe.h"

namespace qmlx::vulkan {

// True for "vulkan" and "vulkan:<anything>" (which select_device then validates).
bool is_vulkan_device_spec(std::string_view spec);

// The index of the chosen device in probe.devices.
int select_device(const VulkanProbe& probe, std::string_view spec);

// One line per device ("0: llvmpipe (...) [cpu] can run"), or why there are none.
std::string describe_found(const VulkanProbe& probe);

}  // namespace qmlx::vulkan
