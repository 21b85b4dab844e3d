// ImageEmbeddingCache: the vision tower's output for the images seen lately, so that an image
// is encoded once per conversation, not on every turn that still has it in its history (a
// screenshot costs seconds of encoding on a CPU; its rows are a few MiB). Keyed by the image's
// identity (its decoded pixels and resize: image/image_identity.h); least recently used out
// first, bounded in bytes. Thread-safe: requests encode on their own threads.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace qmlx {

class ImageEmbeddingCache {
 public:
  using Rows = std::shared_ptr<const std::vector<float>>;
  struct Key {
    uint64_t low = 0, high = 0;
    bool operator==(const Key&) const = default;
  };

  explicit ImageEmbeddingCache(uint64_t max_bytes) : max_bytes_(max_bytes) {}

  // The rows of `key`, from the cache or from `encode` (called without the lock held; two
  // threads that miss on the same image may both encode it, and the second result is dropped).
  // `hit`, when set, says which it was.
  Rows get_or_encode(const Key& key, const std::function<std::vector<float>()>& encode,
                     bool* hit = nullptr);

  uint64_t bytes() const;
  size_t images() const;

 private:
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return size_t(k.low ^ (k.high * 0x9e3779b97f4a7c15ull));
    }
  };
  using Entry = std::pair<Key, Rows>;

  void evict_locked();

  const uint64_t max_bytes_;
  mutable std::mutex mutex_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<Key, std::list<Entry>::iterator, KeyHash> index_;
  uint64_t bytes_ = 0;
};

}  // namespace qmlx
