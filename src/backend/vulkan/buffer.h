// Buffer: one VkBuffer with a memory allocation of its own, and its host address when that
// memory is mapped (devices whose memory the host shares, and staging buffers). Made by
// Context::create_buffer; it must be destroyed before its Context.
//
// One allocation per buffer is the simplest thing that works for this slice: drivers allow
// thousands (lavapipe: no limit), a model has a few hundred tensors. A suballocator can come
// when small per-request buffers appear.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/vulkan/vulkan_api.h"

namespace qmlx::vulkan {

class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  VkBuffer handle() const { return buffer_; }
  size_t size() const { return size_; }
  // The contents' host address when mapped (always host-coherent), else nullptr.
  uint8_t* mapped() const { return mapped_; }
  explicit operator bool() const { return buffer_ != VK_NULL_HANDLE; }
  // Whether bytes [offset, offset + bytes) lie inside the buffer (without overflow): the check
  // every transfer, copy, fill and binding makes before touching it.
  bool covers(size_t offset, size_t bytes) const {
    return offset <= size_ && bytes <= size_ - offset;
  }

 private:
  friend class Context;
  void release();

  VkDevice device_ = VK_NULL_HANDLE;
  const DeviceFunctions* fn_ = nullptr;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  size_t size_ = 0;
  uint8_t* mapped_ = nullptr;
};

}  // namespace qmlx::vulkan
