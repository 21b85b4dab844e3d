#include "backend/vulkan/command_recorder.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "base/error.h"

namespace qmlx::vulkan {
namespace {

// Each descriptor pool holds this many sets of up to kMaxBindings buffers.
constexpr uint32_t kSetsPerPool = 64;
constexpr uint32_t kMaxBindings = 8;

constexpr VkPipelineStageFlags kDeviceStages =
    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kDeviceWrites = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr VkAccessFlags kDeviceAccess = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                        VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;

}  // namespace

CommandRecorder::CommandRecorder(Context& context) : context_(context), fn_(context.fn()) {
  context_.check_usable();
  const VkDevice device = context_.device();
  try {
    VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
    pool.queueFamilyIndex = context_.queue_family();
    check(fn_.vkCreateCommandPool(device, &pool, nullptr, &command_pool_), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = command_pool_;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    check(fn_.vkAllocateCommandBuffers(device, &alloc, &commands_), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check(fn_.vkCreateFence(device, &fence, nullptr, &fence_), "vkCreateFence");
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(fn_.vkBeginCommandBuffer(commands_, &begin), "vkBeginCommandBuffer");
  } catch (...) {
    release();
    throw;
  }
  // Writes of earlier submissions must be visible here: the host waited for their fences, but
  // that orders nothing on the device's side.
  barrier(kDeviceStages, kDeviceAccess);
  barriers_ = 0;
}

CommandRecorder::~CommandRecorder() {
  if (handed_over_) return;
  release();
  for (Buffer& b : staging_) context_.return_staging(std::move(b));
}

void CommandRecorder::release() {
  const VkDevice device = context_.device();
  for (VkDescriptorPool pool : descriptor_pools_)
    fn_.vkDestroyDescriptorPool(device, pool, nullptr);
  descriptor_pools_.clear();
  if (command_pool_ != VK_NULL_HANDLE) fn_.vkDestroyCommandPool(device, command_pool_, nullptr);
  if (fence_ != VK_NULL_HANDLE) fn_.vkDestroyFence(device, fence_, nullptr);
  command_pool_ = VK_NULL_HANDLE;
  fence_ = VK_NULL_HANDLE;
}

void CommandRecorder::check_recording() const {
  if (submitted_) throw Error("internal: command recorder used after submit_and_wait");
}

void CommandRecorder::barrier(VkPipelineStageFlags dst_stages, VkAccessFlags dst_access) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = kDeviceWrites;
  b.dstAccessMask = dst_access;
  fn_.vkCmdPipelineBarrier(commands_, kDeviceStages, dst_stages, 0, 1, &b, 0, nullptr, 0, nullptr);
  read_.clear();
  written_.clear();
  ++barriers_;
}

void CommandRecorder::order(std::span<const Range> reads, std::span<const Range> writes) {
  auto hits = [](const std::vector<Range>& recorded, const Range& r) {
    return std::any_of(recorded.begin(), recorded.end(), [&](const Range& o) {
      return o.buffer == r.buffer && o.begin < r.end && r.begin < o.end;
    });
  };
  bool conflict = false;
  for (const Range& r : reads) conflict = conflict || hits(written_, r);
  for (const Range& w : writes) conflict = conflict || hits(written_, w) || hits(read_, w);
  if (conflict) barrier(kDeviceStages, kDeviceAccess);
  read_.insert(read_.end(), reads.begin(), reads.end());
  written_.insert(written_.end(), writes.begin(), writes.end());
}

VkDescriptorSet CommandRecorder::allocate_set(const Pipeline& pipeline) {
  const VkDevice device = context_.device();
  if (sets_left_ == 0) {
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * kMaxBindings};
    VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    info.maxSets = kSetsPerPool;
    info.poolSizeCount = 1;
    info.pPoolSizes = &size;
    VkDescriptorPool pool;
    check(fn_.vkCreateDescriptorPool(device, &info, nullptr, &pool), "vkCreateDescriptorPool");
    descriptor_pools_.push_back(pool);
    sets_left_ = kSetsPerPool;
  }
  VkDescriptorSetAllocateInfo alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  alloc.descriptorPool = descriptor_pools_.back();
  alloc.descriptorSetCount = 1;
  alloc.pSetLayouts = &pipeline.set_layout;
  VkDescriptorSet set;
  check(fn_.vkAllocateDescriptorSets(device, &alloc, &set), "vkAllocateDescriptorSets");
  --sets_left_;
  return set;
}

void CommandRecorder::dispatch(const Pipeline& pipeline, std::span<const Binding> bindings,
                               const void* push, size_t push_bytes, uint32_t groups_x,
                               uint32_t groups_y, uint32_t groups_z) {
  check_recording();
  const DeviceInfo& device = context_.device_info();
  if (bindings.size() != pipeline.bindings || push_bytes != pipeline.push_constant_bytes ||
      bindings.size() > kMaxBindings)
    throw Error("internal: dispatch of " + pipeline.name + " does not match its interface");
  if (groups_x > device.max_workgroup_count[0] || groups_y > device.max_workgroup_count[1] ||
      groups_z > device.max_workgroup_count[2])
    throw Error("internal: dispatch of " + pipeline.name + " exceeds the workgroup count limit");
  if (groups_x == 0 || groups_y == 0 || groups_z == 0) return;

  std::vector<VkDescriptorBufferInfo> infos(bindings.size());
  std::vector<Range> reads, writes;
  for (size_t i = 0; i < bindings.size(); ++i) {
    const Binding& b = bindings[i];
    if (b.buffer == nullptr || b.range == 0 || !b.buffer->covers(b.offset, b.range))
      throw Error("internal: binding " + std::to_string(i) + " of " + pipeline.name +
                  " is outside its buffer");
    if (b.range > device.max_storage_buffer_range ||
        b.offset % device.min_storage_buffer_offset_alignment != 0)
      throw Error("internal: binding " + std::to_string(i) + " of " + pipeline.name +
                  " breaks the device's storage buffer range or alignment limits");
    infos[i] = {b.buffer->handle(), b.offset, b.range};
    const Range r{b.buffer->handle(), b.offset, b.offset + b.range};
    if (b.access != Access::kWrite) reads.push_back(r);
    if (b.access != Access::kRead) writes.push_back(r);
  }
  order(reads, writes);

  const VkDescriptorSet set = allocate_set(pipeline);
  std::vector<VkWriteDescriptorSet> writes_info(bindings.size());
  for (size_t i = 0; i < bindings.size(); ++i) {
    VkWriteDescriptorSet& w = writes_info[i];
    w = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w.dstSet = set;
    w.dstBinding = uint32_t(i);
    w.descriptorCount = 1;
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = &infos[i];
  }
  fn_.vkUpdateDescriptorSets(context_.device(), uint32_t(writes_info.size()), writes_info.data(), 0,
                             nullptr);
  fn_.vkCmdBindPipeline(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.pipeline);
  fn_.vkCmdBindDescriptorSets(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout, 0, 1,
                              &set, 0, nullptr);
  if (push_bytes)
    fn_.vkCmdPushConstants(commands_, pipeline.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           uint32_t(push_bytes), push);
  fn_.vkCmdDispatch(commands_, groups_x, groups_y, groups_z);
  ++dispatches_;
}

void CommandRecorder::copy(const Buffer& src, size_t src_offset, const Buffer& dst,
                           size_t dst_offset, size_t bytes) {
  check_recording();
  if (!src.covers(src_offset, bytes) || !dst.covers(dst_offset, bytes))
    throw Error("internal: Vulkan copy outside its buffers");
  if (bytes == 0) return;
  const Range read{src.handle(), src_offset, src_offset + bytes};
  const Range write{dst.handle(), dst_offset, dst_offset + bytes};
  order({&read, 1}, {&write, 1});
  VkBufferCopy region{src_offset, dst_offset, bytes};
  fn_.vkCmdCopyBuffer(commands_, src.handle(), dst.handle(), 1, &region);
}

std::pair<const Buffer*, size_t> CommandRecorder::stage(size_t bytes) {
  bytes = (bytes + 15) & ~size_t(15);  // keeps every slice 16-byte aligned
  if (staging_.empty() || staging_.back().size() - staging_used_ < bytes) {
    staging_.push_back(context_.take_staging(bytes));
    staging_used_ = 0;
  }
  const size_t offset = staging_used_;
  staging_used_ += bytes;
  return {&staging_.back(), offset};
}

void CommandRecorder::upload(const Buffer& dst, size_t offset, const void* src, size_t bytes) {
  check_recording();
  if (!dst.covers(offset, bytes)) throw Error("internal: Vulkan upload past the end of a buffer");
  if (bytes == 0) return;
  ++context_.mutable_counts().host_writes;
  if (dst.mapped() != nullptr) {
    std::memcpy(dst.mapped() + offset, src, bytes);
    return;
  }
  const auto [staging, at] = stage(bytes);
  std::memcpy(staging->mapped() + at, src, bytes);
  copy(*staging, at, dst, offset, bytes);
}

void CommandRecorder::download(const Buffer& src, size_t offset, void* dst, size_t bytes) {
  check_recording();
  if (!src.covers(offset, bytes)) throw Error("internal: Vulkan download past the end of a buffer");
  if (bytes == 0) return;
  ++context_.mutable_counts().host_reads;
  if (src.mapped() != nullptr) {
    read_backs_.push_back({src.mapped() + offset, dst, bytes});
    return;
  }
  const auto [staging, at] = stage(bytes);
  copy(src, offset, *staging, at, bytes);
  read_backs_.push_back({staging->mapped() + at, dst, bytes});
}

void CommandRecorder::fill_zero(const Buffer& dst, size_t offset, size_t bytes) {
  check_recording();
  if (offset % 4 != 0 || bytes % 4 != 0 || !dst.covers(offset, bytes))
    throw Error("internal: Vulkan fill outside its buffer or unaligned");
  if (bytes == 0) return;
  const Range write{dst.handle(), offset, offset + bytes};
  order({}, {&write, 1});
  fn_.vkCmdFillBuffer(commands_, dst.handle(), offset, bytes, 0);
}

bool device_loss_simulated() {
  const char* file = std::getenv("QMLX_VULKAN_LOSE_DEVICE_FILE");
  return file != nullptr && *file != '\0' && std::filesystem::exists(file);
}

void CommandRecorder::submit_and_wait() {
  check_recording();
  submitted_ = true;
  // The host reads results after the fence: make the device's writes visible to it.
  barrier(VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  check(fn_.vkEndCommandBuffer(commands_), "vkEndCommandBuffer");
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &commands_;
  const std::string& name = context_.device_info().name;
  if (device_loss_simulated()) {
    context_.mark_lost("device lost (simulated: $QMLX_VULKAN_LOSE_DEVICE_FILE exists)", {});
    throw DeviceUnavailable("Vulkan: device lost on " + name + " while submitting work");
  }
  const auto submitted = std::chrono::steady_clock::now();
  VkResult result = fn_.vkQueueSubmit(context_.queue(), 1, &submit, fence_);
  if (result == VK_ERROR_DEVICE_LOST) {
    context_.mark_lost("device lost (at submit)", {});
    throw DeviceUnavailable("Vulkan: device lost on " + name + " while submitting work");
  }
  check(result, "vkQueueSubmit");
  TransferCounts& counts = context_.mutable_counts();
  ++counts.submissions;
  counts.dispatches += dispatches_;
  counts.record_ns += uint64_t(std::chrono::nanoseconds(submitted - started_).count());
  const auto timeout = context_.fence_timeout();
  result = fn_.vkWaitForFences(context_.device(), 1, &fence_, VK_TRUE,
                               uint64_t(timeout.count()) * 1'000'000ull);
  counts.wait_ns +=
      uint64_t(std::chrono::nanoseconds(std::chrono::steady_clock::now() - submitted).count());
  if (result == VK_SUCCESS) {
    for (const ReadBack& r : read_backs_) std::memcpy(r.to, r.from, r.bytes);
    return;
  }
  std::string why = result == VK_TIMEOUT
                        ? "work did not finish within " + std::to_string(timeout.count()) + " ms"
                        : std::string("device lost (") + result_name(result) + ")";
  // The command buffer may still run: its pools and fence go to the context, freed once it ends.
  context_.mark_lost(why,
                     {fence_, command_pool_, std::move(descriptor_pools_), std::move(staging_)});
  handed_over_ = true;
  throw DeviceUnavailable("Vulkan: " + why + " on " + name + " (" + std::to_string(dispatches_) +
                          " dispatches); the device context is unusable");
}

}  // namespace qmlx::vulkan
