#include "backend/vulkan/instance.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backend/vulkan/validation_report.h"
#include "base/error.h"
#include "base/logging.h"

namespace qmlx::vulkan {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";
constexpr size_t kKeptMessages = 32;

struct ProcessValidation {
  std::atomic<bool> active{false};
  std::atomic<size_t> count{0};
  std::mutex mutex;
  std::vector<std::string> messages;  // the first few
};

ProcessValidation& process_validation() {
  static ProcessValidation* p = new ProcessValidation;  // never destroyed: instances may outlive
  return *p;                                            // static destruction
}

bool has_layer(const GlobalFunctions& g, const char* name) {
  uint32_t count = 0;
  g.vkEnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  g.vkEnumerateInstanceLayerProperties(&count, layers.data());
  return std::any_of(layers.begin(), layers.end(),
                     [&](const VkLayerProperties& l) { return !std::strcmp(l.layerName, name); });
}

// Extensions of the implementation (layer == nullptr) or of one layer.
std::vector<std::string> instance_extensions(const GlobalFunctions& g, const char* layer) {
  uint32_t count = 0;
  g.vkEnumerateInstanceExtensionProperties(layer, &count, nullptr);
  std::vector<VkExtensionProperties> props(count);
  g.vkEnumerateInstanceExtensionProperties(layer, &count, props.data());
  std::vector<std::string> names;
  for (const auto& p : props) names.emplace_back(p.extensionName);
  return names;
}

bool contains(const std::vector<std::string>& names, const char* name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

bool validation_requested() {
  const char* v = std::getenv("QMLX_VULKAN_VALIDATION");
  return v != nullptr && !std::strcmp(v, "1");
}

std::shared_ptr<Instance> Instance::create() {
  std::string why;
  const Loader* loader = vulkan_loader(&why);
  if (loader == nullptr) throw Error(why);
  const GlobalFunctions& g = loader->global;
  if (loader->instance_version < VK_API_VERSION_1_1)
    throw Error("the Vulkan loader " + loader->library_name + " supports only Vulkan 1.0");

  std::shared_ptr<Instance> self(new Instance());
  self->loader_ = loader;
  self->api_version_ = std::min<uint32_t>(loader->instance_version, VK_API_VERSION_1_3);

  std::vector<std::string> available = instance_extensions(g, nullptr);
  std::vector<const char*> extensions, layers;
  VkInstanceCreateFlags flags = 0;
  // MoltenVK (macOS) is a "portability" implementation: listed only when the app opts in.
  if (contains(available, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }

  bool validation = false, validation_features = false;
  if (validation_requested()) {
    if (!has_layer(g, kValidationLayer)) {
      log_warn(
          "QMLX_VULKAN_VALIDATION=1 but the layer VK_LAYER_KHRONOS_validation is not "
          "installed (Debian: vulkan-validationlayers); running without validation");
    } else {
      std::vector<std::string> layer_ext = instance_extensions(g, kValidationLayer);
      validation = contains(available, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) ||
                   contains(layer_ext, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
      validation_features = contains(layer_ext, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
      if (validation) {
        layers.push_back(kValidationLayer);
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        if (validation_features) extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
      }
    }
  }

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "qmlx";
  app.pEngineName = "qmlx";
  app.apiVersion = self->api_version_;

  // Chained into the create info too, so instance creation and destruction are checked.
  VkDebugUtilsMessengerCreateInfoEXT messenger_info{
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger_info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                   VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger_info.pfnUserCallback = &Instance::on_message;
  messenger_info.pUserData = self.get();
  // Synchronization validation catches missing barriers between dispatches, the backend's
  // likeliest class of bug.
  const VkValidationFeatureEnableEXT enables[] = {
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;
  if (validation_features) messenger_info.pNext = &features;

  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.flags = flags;
  info.pApplicationInfo = &app;
  info.enabledLayerCount = uint32_t(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = uint32_t(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  if (validation) info.pNext = &messenger_info;
  const VkResult created = g.vkCreateInstance(&info, nullptr, &self->instance_);
  // The loader's answer when it finds no driver at all.
  if (created == VK_ERROR_INCOMPATIBLE_DRIVER)
    throw Error(
        "no Vulkan driver found (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER; "
        "Debian: mesa-vulkan-drivers provides lavapipe)");
  check(created, "vkCreateInstance");
  self->fn_ = load_instance_functions(*loader, self->instance_);

  if (validation) {
    messenger_info.pNext = nullptr;
    check(self->fn_.vkCreateDebugUtilsMessengerEXT(self->instance_, &messenger_info, nullptr,
                                                   &self->messenger_),
          "vkCreateDebugUtilsMessengerEXT");
    process_validation().active = true;
  }
  return self;
}

Instance::~Instance() {
  if (instance_ == VK_NULL_HANDLE) return;
  if (messenger_ != VK_NULL_HANDLE)
    fn_.vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  fn_.vkDestroyInstance(instance_, nullptr);
}

bool process_validation_active() { return process_validation().active.load(); }
size_t process_validation_message_count() { return process_validation().count.load(); }
std::vector<std::string> process_validation_messages() {
  ProcessValidation& p = process_validation();
  std::lock_guard lock(p.mutex);
  return p.messages;
}

std::vector<std::string> Instance::validation_messages() const {
  std::lock_guard lock(messages_mutex_);
  return messages_;
}

VkBool32 Instance::on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                              VkDebugUtilsMessageTypeFlagsEXT types,
                              const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  auto* self = static_cast<Instance*>(user);
  const std::string text = data->pMessage != nullptr ? data->pMessage : "(no message)";
  // Only the validation layer's own findings count; loader chatter is logged at debug level.
  if (!(types & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT)) {
    log_debug("Vulkan: " + text);
    return VK_FALSE;
  }
  self->validation_count_.fetch_add(1);
  {
    std::lock_guard lock(self->messages_mutex_);
    if (self->messages_.size() < kKeptMessages) self->messages_.push_back(text);
  }
  ProcessValidation& process = process_validation();
  process.count.fetch_add(1);
  {
    std::lock_guard lock(process.mutex);
    if (process.messages.size() < kKeptMessages) process.messages.push_back(text);
  }
  const bool error = severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  log_line(error ? LogLevel::kError : LogLevel::kWarn, "Vulkan validation: " + text);
  return VK_FALSE;
}

}  // namespace qmlx::vulkan
