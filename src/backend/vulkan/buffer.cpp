#include "backend/vulkan/buffer.h"

#include <utility>

namespace qmlx::vulkan {

Buffer::Buffer(Buffer&& other) noexcept { *this = std::move(other); }

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this == &other) return *this;
  release();
  device_ = std::exchange(other.device_, VK_NULL_HANDLE);
  fn_ = std::exchange(other.fn_, nullptr);
  buffer_ = std::exchange(other.buffer_, VK_NULL_HANDLE);
  memory_ = std::exchange(other.memory_, VK_NULL_HANDLE);
  size_ = std::exchange(other.size_, 0);
  mapped_ = std::exchange(other.mapped_, nullptr);
  return *this;
}

Buffer::~Buffer() { release(); }

void Buffer::release() {
  if (fn_ == nullptr) return;
  // Freeing the memory unmaps it.
  if (buffer_ != VK_NULL_HANDLE) fn_->vkDestroyBuffer(device_, buffer_, nullptr);
  if (memory_ != VK_NULL_HANDLE) fn_->vkFreeMemory(device_, memory_, nullptr);
  buffer_ = VK_NULL_HANDLE;
  memory_ = VK_NULL_HANDLE;
  mapped_ = nullptr;
  fn_ = nullptr;
}

}  // namespace qmlx::vulkan
