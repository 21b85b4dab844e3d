#include "engine/image_embedding_cache.h"

namespace qmlx {
namespace {

uint64_t bytes_of(const ImageEmbeddingCache::Rows& rows) { return rows->size() * sizeof(float); }

}  // namespace

ImageEmbeddingCache::Rows ImageEmbeddingCache::get_or_encode(
    const Key& key, const std::function<std::vector<float>()>& encode, bool* hit) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      if (hit) *hit = true;
      return it->second->second;
    }
  }
  if (hit) *hit = false;
  Rows rows = std::make_shared<const std::vector<float>>(encode());
  std::lock_guard<std::mutex> lock(mutex_);
  if (index_.count(key) || bytes_of(rows) > max_bytes_) return rows;  // raced, or never fits
  lru_.emplace_front(key, rows);
  index_[key] = lru_.begin();
  bytes_ += bytes_of(rows);
  evict_locked();
  return rows;
}

void ImageEmbeddingCache::evict_locked() {
  while (bytes_ > max_bytes_ && !lru_.empty()) {
    bytes_ -= bytes_of(lru_.back().second);
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

uint64_t ImageEmbeddingCache::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

size_t ImageEmbeddingCache::images() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lru_.size();
}

}  // namespace qmlx
