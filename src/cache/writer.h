// SnapshotWriter: the background thread that turns captured checkpoints into files, so the
// request path never waits on disk. Its queue is bounded: when it is full, the least valuable
// write (by snapshot kind; the oldest among equals, the new one included) is dropped and
// counted, and any chunk it carried that a queued write still names is handed to that write,
// so no queued snapshot loses a chunk it depends on.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "cache/capture.h"

namespace qmlx {

class SnapshotWriter {
 public:
  // Performs the I/O of one write, on the writer thread.
  using Commit = std::function<void(PendingWrite&)>;
  // Told of each write that a full queue gave up.
  using OnDrop = std::function<void(const PendingWrite&)>;

  SnapshotWriter(size_t capacity, Commit commit, OnDrop on_drop);
  // Finishes every queued write, then stops the thread.
  ~SnapshotWriter();
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;

  // Queues a write. Returns false when the write itself was the one dropped.
  bool submit(PendingWrite write);
  // Returns once every write submitted before the call is committed or dropped.
  void flush();
  size_t depth() const;
  // Whether a queued or in-progress write carries chunk h (so a capture need not copy it).
  bool carries_chunk(const Hash128& h) const;

 private:
  void run();
  // Index into queue_ of the write to drop, or queue_.size() for `candidate` itself.
  size_t least_valuable(const PendingWrite& candidate) const;
  void drop_at(size_t index);
  void track(const PendingWrite& write, int delta);

  const size_t capacity_;
  Commit commit_;
  OnDrop on_drop_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<PendingWrite> queue_;
  std::unordered_map<Hash128, int, Hash128Hasher> carried_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace qmlx
