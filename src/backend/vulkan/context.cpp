#include "backend/vulkan/context.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "backend/vulkan/command_recorder.h"
#include "backend/vulkan/device_selection.h"
#include "backend/vulkan/physical_device.h"
#include "backend/vulkan/pipeline_cache_file.h"
#include "base/error.h"
#include "base/human_bytes.h"
#include "base/logging.h"

namespace qmlx::vulkan {
namespace {

// Staging copies move at most this much per submission, bounding the host memory they take.
constexpr size_t kStagingChunk = size_t(64) << 20;
// Staging buffers are made at least this large (so small transfers share sizes and get
// reused), and at most this many are kept for reuse.
constexpr size_t kMinStaging = size_t(64) << 10;
constexpr size_t kKeptStaging = 8;
// How long closing a context waits for work that timed out before giving up on the device.
constexpr uint64_t kCloseWaitNs = 5'000'000'000ull;

int memory_type(const VkPhysicalDeviceMemoryProperties& memory, uint32_t allowed,
                VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) {
  int fallback = -1;
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags flags = memory.memoryTypes[i].propertyFlags;
    if (!(allowed & (1u << i)) || (flags & required) != required) continue;
    if ((flags & preferred) == preferred) return int(i);
    if (fallback < 0) fallback = int(i);
  }
  return fallback;
}

bool has_type(const VkPhysicalDeviceMemoryProperties& memory, VkMemoryPropertyFlags required) {
  return memory_type(memory, ~0u, required, 0) >= 0;
}

constexpr VkMemoryPropertyFlags kHostCoherent =
    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;

}  // namespace

std::unique_ptr<Context> Context::create(const ContextOptions& options) {
  std::unique_ptr<Context> self(new Context());
  self->options_ = options;
  self->instance_ = Instance::create();
  const Instance& instance = *self->instance_;

  std::vector<VkPhysicalDevice> devices = physical_devices(instance);
  VulkanProbe probe;
  probe.status = VulkanProbe::Status::kOk;
  for (size_t i = 0; i < devices.size(); ++i)
    probe.devices.push_back(describe_physical_device(instance, devices[i], int(i)));
  const int chosen = select_device(probe, options.device);
  self->info_ = probe.devices[chosen];
  self->physical_ = devices[chosen];

  const float priority = 1.f;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = self->info_.compute_queue_family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  std::vector<const char*> extensions;
  // A portability implementation (MoltenVK) must be told the app knows it is one.
  const std::vector<std::string> available = device_extensions(instance, self->physical_);
  if (std::find(available.begin(), available.end(), "VK_KHR_portability_subset") != available.end())
    extensions.push_back("VK_KHR_portability_subset");
  // float64 serves only the exact-fma kernel variants (fma_mode.h).
  VkPhysicalDeviceFeatures features{};
  features.shaderFloat64 = self->info_.features.shader_float64 && !feature_masked("float64");
  self->float64_ = features.shaderFloat64;
  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pEnabledFeatures = &features;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  info.enabledExtensionCount = uint32_t(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  check(instance.fn().vkCreateDevice(self->physical_, &info, nullptr, &self->device_),
        "vkCreateDevice");
  self->fn_ = load_device_functions(instance.fn(), self->device_);
  self->fn_.vkGetDeviceQueue(self->device_, queue.queueFamilyIndex, 0, &self->queue_);

  instance.fn().vkGetPhysicalDeviceMemoryProperties(self->physical_, &self->memory_);
  // A discrete GPU's host-visible device memory (resizable BAR) is slow for the host to read,
  // so only devices that share the host's memory skip the staging copies.
  self->unified_ = !options.force_staging && !feature_masked("unified-memory") &&
                   self->info_.type != DeviceType::kDiscrete &&
                   has_type(self->memory_, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | kHostCoherent);

  std::string cache_path;
  if (options.use_pipeline_cache) {
    const std::string dir = options.pipeline_cache_dir.empty() ? default_pipeline_cache_dir()
                                                               : options.pipeline_cache_dir;
    cache_path = pipeline_cache_path(dir, self->info_);
  }
  self->pipelines_ =
      std::make_unique<Pipelines>(self->device_, self->fn_, self->info_, std::move(cache_path));
  return self;
}

Context::~Context() {
  if (device_ == VK_NULL_HANDLE) return;
  release_pending();
  if (!pending_.empty()) {
    // Destroying a device with work still running is undefined; leaking it is not. The
    // pipelines and the instance under it are left alone too.
    log_error("Vulkan: " + info_.name +
              " still runs work that timed out; leaving the device open at exit");
    (void)pipelines_.release();
    new std::shared_ptr<Instance>(std::move(instance_));
    return;
  }
  free_staging_.clear();
  pipelines_.reset();
  fn_.vkDestroyDevice(device_, nullptr);
}

void Context::release_pending() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (fn_.vkWaitForFences(device_, 1, &it->fence, VK_TRUE, kCloseWaitNs) != VK_SUCCESS) {
      ++it;
      continue;
    }
    for (VkDescriptorPool pool : it->descriptor_pools)
      fn_.vkDestroyDescriptorPool(device_, pool, nullptr);
    fn_.vkDestroyCommandPool(device_, it->command_pool, nullptr);
    fn_.vkDestroyFence(device_, it->fence, nullptr);
    it = pending_.erase(it);  // its staging buffers with it
  }
}

bool feature_masked(const std::string& feature) {
  const char* list = std::getenv("QMLX_VULKAN_MASK_FEATURES");
  if (list == nullptr) return false;
  std::stringstream items(list);
  for (std::string item; std::getline(items, item, ',');)
    if (item == feature) return true;
  return false;
}

FmaMode Context::fma_mode() {
  if (!fma_mode_) fma_mode_ = detect_fma_mode(*this, float64_);
  return *fma_mode_;
}

bool Context::drain_pending() {
  release_pending();
  return pending_.empty();
}

void Context::check_usable() const {
  if (!lost_.empty())
    throw DeviceUnavailable("Vulkan device " + info_.name + " is unusable: " + lost_);
}

void Context::mark_lost(const std::string& why, PendingSubmission pending) {
  if (lost_.empty()) lost_ = why;
  if (pending.fence != VK_NULL_HANDLE) pending_.push_back(std::move(pending));
}

Buffer Context::allocate(size_t bytes, VkBufferUsageFlags usage, bool host_visible) {
  check_usable();
  bytes = std::max<size_t>(4, (bytes + 3) & ~size_t(3));
  if (info_.max_allocation_bytes && bytes > info_.max_allocation_bytes)
    throw Error("Vulkan: a buffer of " + human_bytes(bytes) + " exceeds " + info_.name +
                "'s largest allocation (" + human_bytes(info_.max_allocation_bytes) + ")");
  Buffer b;
  b.device_ = device_;
  b.fn_ = &fn_;
  b.size_ = bytes;
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = bytes;
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(fn_.vkCreateBuffer(device_, &info, nullptr, &b.buffer_), "vkCreateBuffer");
  VkMemoryRequirements needs;
  fn_.vkGetBufferMemoryRequirements(device_, b.buffer_, &needs);
  const bool mapped = host_visible || unified_;
  int type;
  if (host_visible) {
    // Staging: cached memory makes the host's reads of downloads fast.
    type = memory_type(memory_, needs.memoryTypeBits, kHostCoherent,
                       kHostCoherent | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  } else if (unified_) {
    type = memory_type(memory_, needs.memoryTypeBits,
                       VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | kHostCoherent, 0);
  } else {
    type = memory_type(memory_, needs.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  }
  if (type < 0) throw Error("Vulkan: " + info_.name + " has no suitable memory type");
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = needs.size;
  alloc.memoryTypeIndex = uint32_t(type);
  VkResult result = fn_.vkAllocateMemory(device_, &alloc, nullptr, &b.memory_);
  if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY)
    throw DeviceUnavailable("Vulkan: out of memory allocating " + human_bytes(bytes) + " on " +
                            info_.name);
  check(result, "vkAllocateMemory");
  check(fn_.vkBindBufferMemory(device_, b.buffer_, b.memory_, 0), "vkBindBufferMemory");
  if (mapped) {
    void* address = nullptr;
    check(fn_.vkMapMemory(device_, b.memory_, 0, VK_WHOLE_SIZE, 0, &address), "vkMapMemory");
    b.mapped_ = static_cast<uint8_t*>(address);
  }
  return b;
}

Buffer Context::create_buffer(size_t bytes) {
  return allocate(bytes,
                  VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                      VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                  /*host_visible=*/false);
}

void Context::ensure_buffer(Buffer& buffer, size_t bytes) {
  bytes = std::max<size_t>(bytes, 16);
  if (!buffer || buffer.size() < bytes) buffer = create_buffer(bytes);
}

void Context::upload(const Buffer& dst, size_t offset, const void* src, size_t bytes) {
  check_usable();
  if (!dst.covers(offset, bytes)) throw Error("internal: Vulkan upload past the end of a buffer");
  if (bytes == 0) return;
  ++counts_.host_writes;
  // No submission is ever left running, so the device is not reading this memory now.
  if (dst.mapped() != nullptr) {
    std::memcpy(dst.mapped() + offset, src, bytes);
    return;
  }
  Buffer staging = take_staging(std::min(bytes, kStagingChunk));
  for (size_t done = 0; done < bytes; done += kStagingChunk) {
    const size_t n = std::min(kStagingChunk, bytes - done);
    std::memcpy(staging.mapped(), static_cast<const uint8_t*>(src) + done, n);
    CommandRecorder recorder(*this);
    recorder.copy(staging, 0, dst, offset + done, n);
    recorder.submit_and_wait();
  }
  return_staging(std::move(staging));
}

void Context::download(const Buffer& src, size_t offset, void* dst, size_t bytes) {
  check_usable();
  if (!src.covers(offset, bytes)) throw Error("internal: Vulkan download past the end of a buffer");
  if (bytes == 0) return;
  ++counts_.host_reads;
  if (src.mapped() != nullptr) {
    std::memcpy(dst, src.mapped() + offset, bytes);
    return;
  }
  Buffer staging = take_staging(std::min(bytes, kStagingChunk));
  for (size_t done = 0; done < bytes; done += kStagingChunk) {
    const size_t n = std::min(kStagingChunk, bytes - done);
    CommandRecorder recorder(*this);
    recorder.copy(src, offset + done, staging, 0, n);
    recorder.submit_and_wait();
    std::memcpy(static_cast<uint8_t*>(dst) + done, staging.mapped(), n);
  }
  return_staging(std::move(staging));
}

Buffer Context::take_staging(size_t bytes) {
  // The smallest kept buffer that is large enough.
  auto fits = std::find_if(free_staging_.begin(), free_staging_.end(),
                           [&](const Buffer& b) { return b.size() >= bytes; });
  if (fits != free_staging_.end()) {
    Buffer b = std::move(*fits);
    free_staging_.erase(fits);
    return b;
  }
  ++counts_.staging_allocations;
  return allocate(std::max(bytes, kMinStaging),
                  VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                  /*host_visible=*/true);
}

void Context::return_staging(Buffer buffer) {
  if (!buffer) return;
  auto at = std::lower_bound(free_staging_.begin(), free_staging_.end(), buffer.size(),
                             [](const Buffer& b, size_t size) { return b.size() < size; });
  free_staging_.insert(at, std::move(buffer));
  // Too many kept: the smallest go first (a large transfer is the costly one to repeat).
  if (free_staging_.size() > kKeptStaging) free_staging_.erase(free_staging_.begin());
}

}  // namespace qmlx::vulkan
