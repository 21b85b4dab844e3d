// Context: one Vulkan device opened for compute: the logical device and its compute queue,
// buffers and transfers to and from them, and the lazily created pipelines. Work is recorded
// with a CommandRecorder (command_recorder.h) and submitted once per recorder.
//
// Memory: on a device whose memory the host shares (integrated GPUs, lavapipe) buffers live in
// memory that is both device-local and host-visible and are read and written in place; on a
// discrete GPU they are device-local and transfers go through a host-visible staging buffer.
//
// Failure: a submission that does not finish within `fence_timeout`, or a lost device, throws a
// qmlx::Error that says so, and every later use of the context throws the same; nothing waits
// without a bound.
//
// One thread at a time records and submits on a context (Pipelines alone is thread-safe).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/vulkan/buffer.h"
#include "backend/vulkan/device_info.h"
#include "backend/vulkan/fma_mode.h"
#include "backend/vulkan/instance.h"
#include "backend/vulkan/pipelines.h"
#include "backend/vulkan/transfer_counts.h"

namespace qmlx::vulkan {

// True when $QMLX_VULKAN_MASK_FEATURES (a comma-separated list) names `feature`: the context
// then acts as on a device without it, so the fallback paths run on a device that has it
// (tests, CI). Known: "float64" (fma_mode.h: without it an unfused fma stays unfused),
// "unified-memory" (buffers device-local with staging copies, as on a discrete GPU) and
// "gguf-blocks" (GGUF weights uploaded as their affine rewrite, matmul.h, not read in place: the
// same bits in more memory, for comparing the two kernels and as a way round a driver's fault).
bool feature_masked(const std::string& feature);

struct ContextOptions {
  std::string device = "vulkan";  // "vulkan" or "vulkan:N" (device_selection.h)
  // Where the pipeline cache lives; empty: default_pipeline_cache_dir().
  std::string pipeline_cache_dir;
  bool use_pipeline_cache = true;
  // Device-local memory and staging copies even when the host shares the device's memory, so
  // the discrete-GPU path can be tested on lavapipe.
  bool force_staging = false;
  std::chrono::milliseconds fence_timeout{60000};
};

// What a timed-out submission still owns: released once its fence signals.
struct PendingSubmission {
  VkFence fence = VK_NULL_HANDLE;
  VkCommandPool command_pool = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> descriptor_pools;
  std::vector<Buffer> staging;
};

class Context {
 public:
  // Throws qmlx::Error when no device matches options.device (listing what was found).
  static std::unique_ptr<Context> create(const ContextOptions& options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceInfo& device_info() const { return info_; }
  const Instance& instance() const { return *instance_; }
  VkDevice device() const { return device_; }
  const DeviceFunctions& fn() const { return fn_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return info_.compute_queue_family; }
  std::chrono::milliseconds fence_timeout() const { return options_.fence_timeout; }
  // True when buffers are host-mapped device memory (no staging copies).
  bool unified_memory() const { return unified_; }
  Pipelines& pipelines() { return *pipelines_; }
  // How the kernels get a correctly rounded fma here (fma_mode.h); probed on first use.
  FmaMode fma_mode();

  // A storage buffer of at least `bytes` (rounded up to 4), contents undefined.
  Buffer create_buffer(size_t bytes);
  // `buffer` made at least `bytes` long (and 16): reallocated, contents lost, when it is
  // smaller or empty; kept as it is otherwise. For scratch buffers sized by each call.
  void ensure_buffer(Buffer& buffer, size_t bytes);
  // Copies between host memory and a buffer; each call finishes before it returns.
  void upload(const Buffer& dst, size_t offset, const void* src, size_t bytes);
  void download(const Buffer& src, size_t offset, void* dst, size_t bytes);

  // A host-visible staging buffer of at least `bytes`, reused from earlier transfers when one
  // is free; give it back with return_staging once the work using it has finished.
  Buffer take_staging(size_t bytes);
  void return_staging(Buffer buffer);

  const TransferCounts& counts() const { return counts_; }
  // Kept by CommandRecorder and the transfers above.
  TransferCounts& mutable_counts() { return counts_; }

  // Throws when the context was lost (timeout, lost device).
  void check_usable() const;
  // Records that the device can no longer be trusted; `pending` is kept until it signals.
  void mark_lost(const std::string& why, PendingSubmission pending);
  // Waits (up to 5 s each) for work that timed out and frees what it held; true when none is
  // left. Buffers such work uses must outlive it: call this before destroying them.
  bool drain_pending();

 private:
  Context() = default;
  Buffer allocate(size_t bytes, VkBufferUsageFlags usage, bool host_visible);
  void release_pending();

  ContextOptions options_;
  std::shared_ptr<Instance> instance_;
  DeviceInfo info_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  DeviceFunctions fn_;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
  bool unified_ = false;
  bool float64_ = false;  // shaderFloat64 enabled
  std::optional<FmaMode> fma_mode_;
  std::unique_ptr<Pipelines> pipelines_;
  std::string lost_;  // why the context is unusable; empty while it is fine
  std::vector<PendingSubmission> pending_;
  std::vector<Buffer> free_staging_;  // kept for reuse, largest last
  TransferCounts counts_;
};

}  // namespace qmlx::vulkan
