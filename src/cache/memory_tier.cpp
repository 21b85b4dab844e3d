#include "cache/memory_tier.h"

namespace qmlx {

std::vector<std::string> MemoryTier::put(const std::string& name, SharedBytes bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> evicted;
  auto it = map_.find(name);
  if (it != map_.end()) {
    used_ -= it->second->bytes->size();
    lru_.erase(it->second);
    map_.erase(it);
  }
  if (bytes->size() > capacity_) {
    evicted.push_back(name);
    return evicted;
  }
  while (used_ + bytes->size() > capacity_ && !lru_.empty()) {
    Entry& victim = lru_.back();
    used_ -= victim.bytes->size();
    evicted.push_back(victim.name);
    map_.erase(victim.name);
    lru_.pop_back();
  }
  used_ += bytes->size();
  lru_.push_front(Entry{name, std::move(bytes)});
  map_[name] = lru_.begin();
  return evicted;
}

SharedBytes MemoryTier::get(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = map_.find(name);
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->bytes;
}

bool MemoryTier::contains(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return map_.count(name) != 0;
}

void MemoryTier::remove(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = map_.find(name);
  if (it == map_.end()) return;
  used_ -= it->second->bytes->size();
  lru_.erase(it->second);
  map_.erase(it);
}

void MemoryTier::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  lru_.clear();
  map_.clear();
  used_ = 0;
}

uint64_t MemoryTier::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return used_;
}

size_t MemoryTier::entries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return map_.size();
}

}  // namespace qmlx
