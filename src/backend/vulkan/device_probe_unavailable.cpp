// probe_vulkan() for a build without the Vulkan backend (QMLX_VULKAN off, or no Vulkan headers
// or glslc at configure time): qmlx still builds, and `qmlx devices` says why there is no GPU.
#include "backend/vulkan/device_probe.h"
#include "backend/vulkan/validation_report.h"

namespace qmlx::vulkan {

bool vulkan_built() { return false; }

VulkanProbe probe_vulkan() {
  VulkanProbe probe;
  probe.status = VulkanProbe::Status::kNoBuildSupport;
  probe.message =
      "this qmlx build has no Vulkan support (configured with QMLX_VULKAN=OFF or without the "
      "Vulkan headers or glslc; install libvulkan-dev and glslc, then reconfigure)";
  return probe;
}

bool process_validation_active() { return false; }
size_t process_validation_message_count() { return 0; }
std::vector<std::string> process_validation_messages() { return {}; }

}  // namespace qmlx::vulkan
