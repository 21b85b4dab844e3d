#include "backend/vulkan/physical_device.h"

#include <algorithm>

namespace qmlx::vulkan {
namespace {

DeviceType device_type(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return DeviceType::kDiscrete;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return DeviceType::kIntegrated;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return DeviceType::kVirtual;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return DeviceType::kCpu;
    default:
      return DeviceType::kOther;
  }
}

bool has(const std::vector<std::string>& names, const char* name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Appends `s` to a pNext chain whose last element is *tail.
template <typename T>
void chain(void**& tail, T& s) {
  *tail = &s;
  tail = &s.pNext;
}

void read_memory(const Instance& instance, VkPhysicalDevice device, DeviceInfo& info) {
  VkPhysicalDeviceMemoryProperties memory;
  instance.fn().vkGetPhysicalDeviceMemoryProperties(device, &memory);
  for (uint32_t i = 0; i < memory.memoryHeapCount; ++i)
    if (memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      info.device_local_bytes += memory.memoryHeaps[i].size;
}

void read_queues(const Instance& instance, VkPhysicalDevice device, DeviceInfo& info) {
  uint32_t count = 0;
  instance.fn().vkGetPhysicalDeviceQueueFamilyProperties(device, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  instance.fn().vkGetPhysicalDeviceQueueFamilyProperties(device, &count, families.data());
  // Prefer a compute-only family (an asynchronous compute queue on discrete GPUs), else any
  // family with compute.
  for (int pass = 0; pass < 2 && !info.has_compute_queue; ++pass) {
    for (uint32_t i = 0; i < count; ++i) {
      const VkQueueFlags flags = families[i].queueFlags;
      if (!(flags & VK_QUEUE_COMPUTE_BIT) || families[i].queueCount == 0) continue;
      if (pass == 0 && (flags & VK_QUEUE_GRAPHICS_BIT)) continue;
      info.has_compute_queue = true;
      info.compute_queue_family = i;
      break;
    }
  }
}

}  // namespace

std::vector<VkPhysicalDevice> physical_devices(const Instance& instance) {
  uint32_t count = 0;
  check(instance.fn().vkEnumeratePhysicalDevices(instance.handle(), &count, nullptr),
        "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> devices(count);
  check(instance.fn().vkEnumeratePhysicalDevices(instance.handle(), &count, devices.data()),
        "vkEnumeratePhysicalDevices");
  devices.resize(count);
  return devices;
}

std::vector<std::string> device_extensions(const Instance& instance, VkPhysicalDevice device) {
  uint32_t count = 0;
  instance.fn().vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> props(count);
  instance.fn().vkEnumerateDeviceExtensionProperties(device, nullptr, &count, props.data());
  std::vector<std::string> names;
  for (uint32_t i = 0; i < count; ++i) names.emplace_back(props[i].extensionName);
  return names;
}

DeviceInfo describe_physical_device(const Instance& instance, VkPhysicalDevice device, int index) {
  const InstanceFunctions& fn = instance.fn();
  DeviceInfo info;
  info.index = index;
  VkPhysicalDeviceProperties base;
  fn.vkGetPhysicalDeviceProperties(device, &base);
  info.name = base.deviceName;
  info.type = device_type(base.deviceType);
  info.vendor_id = base.vendorID;
  info.device_id = base.deviceID;
  info.driver_version = base.driverVersion;
  info.api_version = base.apiVersion;
  std::copy(std::begin(base.pipelineCacheUUID), std::end(base.pipelineCacheUUID),
            info.pipeline_cache_uuid.begin());
  info.max_storage_buffer_range = base.limits.maxStorageBufferRange;
  info.min_storage_buffer_offset_alignment = uint32_t(base.limits.minStorageBufferOffsetAlignment);
  info.max_shared_memory_bytes = base.limits.maxComputeSharedMemorySize;
  info.max_workgroup_invocations = base.limits.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) info.max_workgroup_count[i] = base.limits.maxComputeWorkGroupCount[i];
  read_memory(instance, device, info);
  read_queues(instance, device, info);

  // What may be chained depends on the version both the instance and the device speak.
  const uint32_t api = std::min(info.api_version, instance.api_version());
  if (api < VK_API_VERSION_1_1) {
    judge_device(info);
    return info;
  }
  const std::vector<std::string> extensions = device_extensions(instance, device);
  const bool v12 = api >= VK_API_VERSION_1_2, v13 = api >= VK_API_VERSION_1_3;
  const bool driver_props = v12 || has(extensions, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  const bool size_control = v13 || has(extensions, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  const bool dot_product = v13 || has(extensions, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);

  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  VkPhysicalDeviceIDProperties id{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties subgroup{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties maintenance3{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceSubgroupSizeControlProperties size_props{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
  void** tail = &props.pNext;
  chain(tail, id);
  chain(tail, subgroup);
  chain(tail, maintenance3);
  if (driver_props) chain(tail, driver);
  if (size_control) chain(tail, size_props);
  fn.vkGetPhysicalDeviceProperties2(device, &props);
  std::copy(std::begin(id.deviceUUID), std::end(id.deviceUUID), info.device_uuid.begin());
  info.subgroup_size = subgroup.subgroupSize;
  info.min_subgroup_size = info.max_subgroup_size = subgroup.subgroupSize;
  info.max_allocation_bytes = maintenance3.maxMemoryAllocationSize;
  if (driver_props) {
    info.driver_name = driver.driverName;
    info.driver_info = driver.driverInfo;
    info.driver_id = uint32_t(driver.driverID);
  }
  if (size_control) {
    info.min_subgroup_size = size_props.minSubgroupSize;
    info.max_subgroup_size = size_props.maxSubgroupSize;
  }

  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDevice16BitStorageFeatures storage16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceSubgroupSizeControlFeatures size_features{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
  VkPhysicalDeviceShaderIntegerDotProductFeatures dot_features{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
  tail = &features.pNext;
  chain(tail, storage16);
  if (v12) chain(tail, f12);
  if (size_control) chain(tail, size_features);
  if (dot_product) chain(tail, dot_features);
  fn.vkGetPhysicalDeviceFeatures2(device, &features);
  info.features.shader_float64 = features.features.shaderFloat64;
  info.features.storage_16bit = storage16.storageBuffer16BitAccess;
  info.features.storage_8bit = v12 && f12.storageBuffer8BitAccess;
  info.features.shader_int8 = v12 && f12.shaderInt8;
  info.features.shader_float16 = v12 && f12.shaderFloat16;
  info.features.buffer_device_address = v12 && f12.bufferDeviceAddress;
  info.features.subgroup_size_control = size_control && size_features.subgroupSizeControl;
  info.features.integer_dot_product = dot_product && dot_features.shaderIntegerDotProduct;
  judge_device(info);
  return info;
}

}  // namespace qmlx::vulkan
