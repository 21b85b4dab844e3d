// Probing for Vulkan: opens the loader, creates an instance and describes every physical device.
// Never throws: a machine without Vulkan is an ordinary outcome that `qmlx devices` reports.
#pragma once

#include <string>
#include <vector>

#include "backend/vulkan/device_info.h"

namespace qmlx::vulkan {

struct VulkanProbe {
  enum class Status {
    kNoBuildSupport,  // qmlx was built without the Vulkan backend (no headers or glslc)
    kNoLoader,        // libvulkan could not be opened
    kNoInstance,      // the loader is there but vkCreateInstance failed (e.g. no driver at all)
    kOk,              // devices may still be empty
  };
  Status status = Status::kNoBuildSupport;
  std::string message;  // why, when status != kOk
  std::string loader;   // the library opened, e.g. "libvulkan.so.1"
  std::string loader_api_version;
  std::vector<DeviceInfo> devices;
};

// True when this build has the Vulkan backend compiled in.
bool vulkan_built();

VulkanProbe probe_vulkan();

}  // namespace qmlx::vulkan
