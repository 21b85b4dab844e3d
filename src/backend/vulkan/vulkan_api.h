// The Vulkan API as function tables filled at run time: libvulkan is opened with dlopen (via
// DynamicLibrary) and every entry point comes from vkGetInstanceProcAddr/vkGetDeviceProcAddr,
// so the qmlx binary has no link-time dependency on it and runs on the CPU where it is absent.
// The list of entry points is vulkan_functions.inc.
#pragma once

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include <string>

#include "backend/vulkan/dynamic_library.h"

namespace qmlx::vulkan {

#define QMLX_VK_GLOBAL(name) PFN_##name name = nullptr;
#define QMLX_VK_INSTANCE(name)
#define QMLX_VK_DEVICE(name)
struct GlobalFunctions {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#include "backend/vulkan/vulkan_functions.inc"
};
#undef QMLX_VK_GLOBAL
#undef QMLX_VK_INSTANCE
#undef QMLX_VK_DEVICE

#define QMLX_VK_GLOBAL(name)
#define QMLX_VK_INSTANCE(name) PFN_##name name = nullptr;
#define QMLX_VK_DEVICE(name)
struct InstanceFunctions {
#include "backend/vulkan/vulkan_functions.inc"
};
#undef QMLX_VK_GLOBAL
#undef QMLX_VK_INSTANCE
#undef QMLX_VK_DEVICE

#define QMLX_VK_GLOBAL(name)
#define QMLX_VK_INSTANCE(name)
#define QMLX_VK_DEVICE(name) PFN_##name name = nullptr;
struct DeviceFunctions {
#include "backend/vulkan/vulkan_functions.inc"
};
#undef QMLX_VK_GLOBAL
#undef QMLX_VK_INSTANCE
#undef QMLX_VK_DEVICE

// The loaded library and its global entry points, opened once per process and kept open (the
// drivers and layers it loads are not meant to be unloaded while objects may still exist).
struct Loader {
  std::string library_name;
  DynamicLibrary library;
  GlobalFunctions global;
  // VK_API_VERSION_* the loader supports (1.0 when it predates vkEnumerateInstanceVersion).
  uint32_t instance_version = VK_API_VERSION_1_0;
};

// The loader, or nullptr with *why set when libvulkan cannot be opened. The library is
// "libvulkan.so.1" (vulkan-1.dll, libvulkan.1.dylib elsewhere) unless $QMLX_VULKAN_LOADER
// names another, which is how tests stand in for a machine without Vulkan.
const Loader* vulkan_loader(std::string* why);

// Instance- and device-level tables. Entry points an instance or device lacks stay nullptr.
InstanceFunctions load_instance_functions(const Loader& loader, VkInstance instance);
DeviceFunctions load_device_functions(const InstanceFunctions& instance, VkDevice device);

// "VK_ERROR_DEVICE_LOST" and the like, for messages.
std::string result_name(VkResult result);

// Throws qmlx::Error("Vulkan: <what> failed: <result>") unless result is VK_SUCCESS.
void check(VkResult result, const char* what);

}  // namespace qmlx::vulkan
