#include "cache/writer.h"

#include <algorithm>

namespace qmlx {

SnapshotWriter::SnapshotWriter(size_t capacity, Commit commit, OnDrop on_drop)
    : capacity_(std::max<size_t>(capacity, 1)),
      commit_(std::move(commit)),
      on_drop_(std::move(on_drop)),
      thread_([this] { run(); }) {}

SnapshotWriter::~SnapshotWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void SnapshotWriter::track(const PendingWrite& write, int delta) {
  for (const PendingChunk& chunk : write.chunks) {
    int& count = carried_[chunk.header.chain_hash];
    count += delta;
    if (count <= 0) carried_.erase(chunk.header.chain_hash);
  }
}

bool SnapshotWriter::submit(PendingWrite write) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (queue_.size() >= capacity_) {
    size_t victim = least_valuable(write);
    if (victim == queue_.size()) {
      // Nothing queued depends on chunks of a write that was never queued.
      lock.unlock();
      on_drop_(write);
      return false;
    }
    drop_at(victim);
  }
  track(write, +1);
  queue_.push_back(std::move(write));
  lock.unlock();
  wake_.notify_one();
  return true;
}

size_t SnapshotWriter::least_valuable(const PendingWrite& candidate) const {
  size_t victim = queue_.size();
  int victim_value = snapshot_kind_value(candidate.header.kind);
  // Front to back, strictly lower value wins: among equals the oldest queued write goes, and
  // the candidate only when everything queued is worth more.
  for (size_t i = 0; i < queue_.size(); ++i) {
    int value = snapshot_kind_value(queue_[i].header.kind);
    if (value < victim_value || (value == victim_value && victim == queue_.size())) {
      victim = i;
      victim_value = value;
    }
  }
  return victim;
}

void SnapshotWriter::drop_at(size_t index) {
  PendingWrite dropped = std::move(queue_[index]);
  queue_.erase(queue_.begin() + std::ptrdiff_t(index));
  track(dropped, -1);
  for (PendingChunk& chunk : dropped.chunks) {
    const Hash128 h = chunk.header.chain_hash;
    for (PendingWrite& heir : queue_) {
      if (std::find(heir.chunk_list.begin(), heir.chunk_list.end(), h) != heir.chunk_list.end()) {
        ++carried_[h];
        heir.chunks.push_back(std::move(chunk));
        break;
      }
    }
  }
  on_drop_(dropped);
}

void SnapshotWriter::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stopping and drained
    PendingWrite write = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    commit_(write);
    lock.lock();
    track(write, -1);
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
  idle_.notify_all();
}

void SnapshotWriter::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

size_t SnapshotWriter::depth() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size() + (busy_ ? 1 : 0);
}

bool SnapshotWriter::carries_chunk(const Hash128& h) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return carried_.count(h) != 0;
}

}  // namespace qmlx
