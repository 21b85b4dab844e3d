#include "model/vulkan/vulkan_sequence.h"

#include <algorithm>

#include "backend/vulkan/binding_window.h"
#include "base/error.h"

namespace qmlx::vulkan {
namespace {

// Rows are added in steps of at least this many, and the capacity at least doubles, so a
// sequence's buffers are reallocated O(log length) times.
constexpr int64_t kMinRows = 256;

}  // namespace

void VulkanSequence::reserve(int64_t rows, int64_t keep, CommandRecorder& recorder,
                             std::vector<Buffer>& retired) {
  if (rows <= capacity || kv.empty()) return;
  const size_t limit = window_capacity(*context) / row_bytes;
  int64_t grown = std::max({rows, capacity * 2, kMinRows});
  grown = std::min<int64_t>(grown, int64_t(limit));
  if (rows > grown)
    throw Error("--device vulkan: " + std::to_string(rows) + " positions of K/V rows (" +
                std::to_string(row_bytes) + " bytes each) exceed one storage binding of " +
                context->device_info().name + " (" + std::to_string(limit) +
                " rows); a longer context needs the cache split across bindings, not done yet");
  const size_t keep_bytes = size_t(std::min(keep, capacity)) * row_bytes;
  for (Rows& layer : kv) {
    Rows next{context->create_buffer(size_t(grown) * row_bytes),
              context->create_buffer(size_t(grown) * row_bytes)};
    if (keep_bytes > 0) {
      recorder.copy(layer.k, 0, next.k, 0, keep_bytes);
      recorder.copy(layer.v, 0, next.v, 0, keep_bytes);
    }
    if (layer.k) retired.push_back(std::move(layer.k));
    if (layer.v) retired.push_back(std::move(layer.v));
    layer = std::move(next);
  }
  capacity = grown;
}

}  // namespace qmlx::vulkan
