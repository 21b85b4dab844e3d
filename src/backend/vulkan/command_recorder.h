// CommandRecorder: records a sequence of dispatches and copies into one command buffer and
// submits it once, waiting on a fence for at most the context's timeout. A forward step's
// inputs from the host and its results back to the host ride in the same submission
// (upload/download below), so a step is one submission and one wait. Barriers are placed
// from what each command declares it reads and writes: a command that reads what an earlier
// one wrote, or writes what an earlier one read or wrote, waits for it (whole-device memory
// barrier); independent commands run without one.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "backend/vulkan/buffer.h"
#include "backend/vulkan/context.h"
#include "backend/vulkan/pipelines.h"

namespace qmlx::vulkan {

enum class Access : uint8_t { kRead, kWrite, kReadWrite };

// A storage-buffer binding: `range` bytes of `buffer` from `offset` (a multiple of the device's
// minStorageBufferOffsetAlignment; range at most its maxStorageBufferRange).
struct Binding {
  const Buffer* buffer = nullptr;
  size_t offset = 0;
  size_t range = 0;
  Access access = Access::kRead;
};

// For tests of what a lost device does to its users: once the file $QMLX_VULKAN_LOSE_DEVICE_FILE
// names exists, every submission fails as on a lost device (the context becomes unusable).
bool device_loss_simulated();

class CommandRecorder {
 public:
  explicit CommandRecorder(Context& context);
  ~CommandRecorder();
  CommandRecorder(const CommandRecorder&) = delete;
  CommandRecorder& operator=(const CommandRecorder&) = delete;

  Context& context() { return context_; }

  // bindings.size() and push_bytes must match the pipeline's interface.
  void dispatch(const Pipeline& pipeline, std::span<const Binding> bindings, const void* push,
                size_t push_bytes, uint32_t groups_x, uint32_t groups_y = 1, uint32_t groups_z = 1);
  void copy(const Buffer& src, size_t src_offset, const Buffer& dst, size_t dst_offset,
            size_t bytes);

  // Host data into `dst`, as part of this submission. Where the host shares the device's
  // memory it is written in place now, before anything recorded runs (the device runs nothing
  // of this context while it is recorded); otherwise it is copied now into a staging buffer
  // whose copy into `dst` is recorded here. Either way: upload before recording what reads
  // `dst`, and not into a range this recorder's commands already use.
  void upload(const Buffer& dst, size_t offset, const void* src, size_t bytes);
  // `bytes` of `src` from `offset` into host memory `dst` when submit_and_wait returns (after
  // everything recorded before this call, which it waits for like any reader).
  void download(const Buffer& src, size_t offset, void* dst, size_t bytes);
  // Zeros `bytes` (a multiple of 4) of `dst` from `offset` (a multiple of 4).
  void fill_zero(const Buffer& dst, size_t offset, size_t bytes);

  // Submits everything recorded and waits. Throws qmlx::Error on a timeout or a lost device
  // (and the context becomes unusable). At most once per recorder.
  void submit_and_wait();

  size_t dispatch_count() const { return dispatches_; }
  size_t barrier_count() const { return barriers_; }

 private:
  struct Range {
    VkBuffer buffer;
    size_t begin, end;
  };
  // Inserts a barrier when `reads`/`writes` conflict with what was recorded since the last one.
  void order(std::span<const Range> reads, std::span<const Range> writes);
  void barrier(VkPipelineStageFlags dst_stages, VkAccessFlags dst_access);
  VkDescriptorSet allocate_set(const Pipeline& pipeline);
  // `bytes` of host-visible staging memory: a buffer and the offset there.
  std::pair<const Buffer*, size_t> stage(size_t bytes);
  void check_recording() const;
  void release();

  Context& context_;
  const DeviceFunctions& fn_;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> descriptor_pools_;
  uint32_t sets_left_ = 0;             // in descriptor_pools_.back()
  std::vector<Range> read_, written_;  // since the last barrier
  size_t dispatches_ = 0, barriers_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  // Staging memory taken from the context (returned once the submission is done), the bytes
  // used of the last buffer, and the read-backs to copy out after the wait.
  struct ReadBack {
    const uint8_t* from;
    void* to;
    size_t bytes;
  };
  std::vector<Buffer> staging_;
  size_t staging_used_ = 0;
  std::vector<ReadBack> read_backs_;
  bool submitted_ = false;
  bool handed_over_ = false;  // resources now owned by the context (timed out)
};

}  // namespace qmlx::vulkan
