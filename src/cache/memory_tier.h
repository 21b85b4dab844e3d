// MemoryTier: the RAM tier (`memory_prefix_cache`): recently used chunk and snapshot files,
// kept as the exact bytes they have on disk, in an LRU bounded in bytes. Keeping file bytes
// (not decoded state) means a RAM hit goes through the same verification as a disk read, and
// a file is shared, not copied, between the tier and a restore in progress. Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace qmlx {

using SharedBytes = std::shared_ptr<const std::vector<uint8_t>>;

class MemoryTier {
 public:
  explicit MemoryTier(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  // Inserts (or refreshes) a file and returns the names evicted to make room. A file larger
  // than the whole capacity is not kept (and is returned as evicted).
  std::vector<std::string> put(const std::string& name, SharedBytes bytes);
  // The file, marked most recently used; null when absent.
  SharedBytes get(const std::string& name);
  bool contains(const std::string& name) const;
  void remove(const std::string& name);
  void clear();
  uint64_t bytes() const;
  size_t entries() const;

 private:
  struct Entry {
    std::string name;
    SharedBytes bytes;
  };

  mutable std::mutex mutex_;
  uint64_t capacity_;
  uint64_t used_ = 0;
  std::list<Entry> lru_;  // front = most recently used
  std::unordered_map<std::string, std::list<Entry>::iterator> map_;
};

}  // namespace qmlx
