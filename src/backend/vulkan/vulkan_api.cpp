#include "backend/vulkan/vulkan_api.h"

#include <cstdlib>
#include <memory>
#include <mutex>

#include "base/error.h"

namespace qmlx::vulkan {
namespace {

const char* default_library_name() {
#if defined(_WIN32)
  return "vulkan-1.dll";
#elif defined(__APPLE__)
  return "libvulkan.1.dylib";
#else
  return "libvulkan.so.1";
#endif
}

std::unique_ptr<Loader> open_loader(std::string* why) {
  auto loader = std::make_unique<Loader>();
  const char* override_name = std::getenv("QMLX_VULKAN_LOADER");
  loader->library_name =
      override_name != nullptr && *override_name ? override_name : default_library_name();
  loader->library = DynamicLibrary::open(loader->library_name);
  if (!loader->library.is_open()) {
    *why = "no Vulkan loader (" + loader->library_name + ") found: " + loader->library.error();
    return nullptr;
  }
  auto get =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(loader->library.symbol("vkGetInstanceProcAddr"));
  if (get == nullptr) {
    *why = loader->library_name + " has no vkGetInstanceProcAddr: not a Vulkan loader";
    return nullptr;
  }
  GlobalFunctions& g = loader->global;
  g.vkGetInstanceProcAddr = get;
#define QMLX_VK_GLOBAL(name) g.name = reinterpret_cast<PFN_##name>(get(nullptr, #name));
#define QMLX_VK_INSTANCE(name)
#define QMLX_VK_DEVICE(name)
#include "backend/vulkan/vulkan_functions.inc"
#undef QMLX_VK_GLOBAL
#undef QMLX_VK_INSTANCE
#undef QMLX_VK_DEVICE
  if (g.vkCreateInstance == nullptr || g.vkEnumerateInstanceExtensionProperties == nullptr ||
      g.vkEnumerateInstanceLayerProperties == nullptr) {
    *why = loader->library_name + " lacks vkCreateInstance: not a usable Vulkan loader";
    return nullptr;
  }
  // vkEnumerateInstanceVersion is Vulkan 1.1; a 1.0 loader does not export it.
  if (g.vkEnumerateInstanceVersion != nullptr)
    g.vkEnumerateInstanceVersion(&loader->instance_version);
  return loader;
}

}  // namespace

const Loader* vulkan_loader(std::string* why) {
  // Opened once: a failed attempt is remembered too, so a machine without Vulkan pays one dlopen.
  // Never closed, not even at exit: a driver thread may still run work that timed out.
  static std::once_flag once;
  static Loader* loader = nullptr;
  static std::string error;
  std::call_once(once, [] { loader = open_loader(&error).release(); });
  if (loader == nullptr && why != nullptr) *why = error;
  return loader;
}

InstanceFunctions load_instance_functions(const Loader& loader, VkInstance instance) {
  InstanceFunctions f;
  PFN_vkGetInstanceProcAddr get = loader.global.vkGetInstanceProcAddr;
#define QMLX_VK_GLOBAL(name)
#define QMLX_VK_INSTANCE(name) f.name = reinterpret_cast<PFN_##name>(get(instance, #name));
#define QMLX_VK_DEVICE(name)
#include "backend/vulkan/vulkan_functions.inc"
#undef QMLX_VK_GLOBAL
#undef QMLX_VK_INSTANCE
#undef QMLX_VK_DEVICE
  return f;
}

DeviceFunctions load_device_functions(const InstanceFunctions& instance, VkDevice device) {
  DeviceFunctions f;
  PFN_vkGetDeviceProcAddr get = instance.vkGetDeviceProcAddr;
#define QMLX_VK_GLOBAL(name)
#define QMLX_VK_INSTANCE(name)
#define QMLX_VK_DEVICE(name)                                 \
  f.name = reinterpret_cast<PFN_##name>(get(device, #name)); \
  if (f.name == nullptr) throw Error("Vulkan: the driver lacks " #name);
#include "backend/vulkan/vulkan_functions.inc"
#undef QMLX_VK_GLOBAL
#undef QMLX_VK_INSTANCE
#undef QMLX_VK_DEVICE
  return f;
}

std::string result_name(VkResult result) {
  switch (result) {
    case VK_SUCCESS:
      return "VK_SUCCESS";
    case VK_NOT_READY:
      return "VK_NOT_READY";
    case VK_TIMEOUT:
      return "VK_TIMEOUT";
    case VK_INCOMPLETE:
      return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:
      return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:
      return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED:
      return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT:
      return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS:
      return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY:
      return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_ERROR_FRAGMENTED_POOL:
      return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_INVALID_SHADER_NV:
      return "VK_ERROR_INVALID_SHADER_NV";
    default:
      return "VkResult " + std::to_string(int(result));
  }
}

void check(VkResult result, const char* what) {
  if (result == VK_SUCCESS) return;
  throw Error(std::string("Vulkan: ") + what + " failed: " + result_name(result));
}

}  // namespace qmlx::vulkan
