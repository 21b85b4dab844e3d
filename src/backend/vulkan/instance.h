// Instance: a VkInstance with its function table and, when $QMLX_VULKAN_VALIDATION=1, the
// Khronos validation layer (core and synchronization checks) plus a debug messenger that counts
// and logs every validation message, so tests can assert a run produced none.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/vulkan/vulkan_api.h"

namespace qmlx::vulkan {

class Instance {
 public:
  // Throws qmlx::Error saying why (no loader, instance creation failed).
  static std::shared_ptr<Instance> create();
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  const InstanceFunctions& fn() const { return fn_; }
  const Loader& loader() const { return *loader_; }
  // The VK_API_VERSION_* requested of the loader (at most 1.3).
  uint32_t api_version() const { return api_version_; }

  // True when the validation layer is active. Requested by $QMLX_VULKAN_VALIDATION=1; when the
  // layer is not installed a warning is logged and this stays false.
  bool validation_enabled() const { return messenger_ != VK_NULL_HANDLE; }
  // Validation warnings and errors reported since the instance was created.
  size_t validation_message_count() const { return validation_count_.load(); }
  std::vector<std::string> validation_messages() const;

 private:
  Instance() = default;
  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT types,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                   void* self);

  const Loader* loader_ = nullptr;
  VkInstance instance_ = VK_NULL_HANDLE;
  InstanceFunctions fn_;
  uint32_t api_version_ = VK_API_VERSION_1_0;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  std::atomic<size_t> validation_count_{0};
  mutable std::mutex messages_mutex_;
  std::vector<std::string> messages_;  // the first few, for test failure output
};

// True when $QMLX_VULKAN_VALIDATION is "1".
bool validation_requested();

}  // namespace qmlx::vulkan
