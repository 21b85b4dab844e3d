#include "backend/vulkan/device_probe.h"

#include "backend/vulkan/instance.h"
#include "backend/vulkan/physical_device.h"
#include "base/error.h"

namespace qmlx::vulkan {

bool vulkan_built() { return true; }

VulkanProbe probe_vulkan() {
  VulkanProbe probe;
  std::string why;
  const Loader* loader = vulkan_loader(&why);
  if (loader == nullptr) {
    probe.status = VulkanProbe::Status::kNoLoader;
    probe.message = why;
    return probe;
  }
  probe.loader = loader->library_name;
  probe.loader_api_version = api_version_string(loader->instance_version);
  std::shared_ptr<Instance> instance;
  try {
    instance = Instance::create();
  } catch (const Error& e) {
    probe.status = VulkanProbe::Status::kNoInstance;
    probe.message = std::string("cannot create a Vulkan instance: ") + e.what();
    return probe;
  }
  try {
    std::vector<VkPhysicalDevice> devices = physical_devices(*instance);
    for (size_t i = 0; i < devices.size(); ++i)
      probe.devices.push_back(describe_physical_device(*instance, devices[i], int(i)));
  } catch (const Error& e) {
    probe.status = VulkanProbe::Status::kNoInstance;
    probe.message = e.what();
    return probe;
  }
  probe.status = VulkanProbe::Status::kOk;
  return probe;
}

}  // namespace qmlx::vulkan
