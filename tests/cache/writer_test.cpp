#include "cache/writer.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

namespace qmlx {
namespace {

PendingWrite write_of(SnapshotKind kind, uint64_t id, std::vector<Hash128> named = {},
                      std::vector<Hash128> carried = {}) {
  PendingWrite w;
  w.header.kind = kind;
  w.header.id = Hash128{id, 0};
  w.chunk_list = std::move(named);
  for (const Hash128& h : carried) {
    PendingChunk chunk;
    chunk.header.chain_hash = h;
    w.chunks.push_back(std::move(chunk));
  }
  return w;
}

// A writer whose commits wait until released, so the queue can be filled deterministically.
class GatedWriter {
 public:
  explicit GatedWriter(size_t capacity)
      : writer_(
            capacity,
            [this](PendingWrite& w) {
              std::unique_lock<std::mutex> lock(mutex_);
              started_ = true;
              changed_.notify_all();
              changed_.wait(lock, [this] { return open_; });
              committed_.push_back(w.header.id.low);
              for (const PendingChunk& c : w.chunks) chunks_.push_back(c.header.chain_hash.low);
            },
            [this](const PendingWrite& w) {
              std::lock_guard<std::mutex> lock(mutex_);
              dropped_.push_back(w.header.id.low);
            }) {}

  void wait_started() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return started_; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  bool started_ = false;
  bool open_ = false;
  std::vector<uint64_t> committed_, dropped_, chunks_;
  SnapshotWriter writer_;  // last: joined before the fields it uses go away
};

TEST(SnapshotWriter, FullQueueDropsTheLeastValuableWrite) {
  GatedWriter gate(2);
  SnapshotWriter& w = gate.writer_;
  ASSERT_TRUE(w.submit(write_of(SnapshotKind::kInterval, 1)));  // being written
  gate.wait_started();
  ASSERT_TRUE(w.submit(write_of(SnapshotKind::kInterval, 2)));
  ASSERT_TRUE(w.submit(write_of(SnapshotKind::kMessageBoundary, 3)));
  EXPECT_EQ(w.depth(), 3u);
  // Full: the queued interval (2) goes for a prompt_end.
  EXPECT_TRUE(w.submit(write_of(SnapshotKind::kPromptEnd, 4)));
  // Full of more valuable writes: the new prefill_progress itself is dropped.
  EXPECT_FALSE(w.submit(write_of(SnapshotKind::kPrefillProgress, 5)));
  // Equal value: the oldest queued write goes (4 before the new prompt_end 6).
  EXPECT_TRUE(w.submit(write_of(SnapshotKind::kPromptEnd, 6)));
  gate.release();
  w.flush();
  EXPECT_EQ(gate.committed_, (std::vector<uint64_t>{1, 3, 6}));
  EXPECT_EQ(gate.dropped_, (std::vector<uint64_t>{2, 5, 4}));
  EXPECT_EQ(w.depth(), 0u);
}

TEST(SnapshotWriter, DroppedWriteHandsItsChunksToAQueuedWriteThatNamesThem) {
  GatedWriter gate(2);
  SnapshotWriter& w = gate.writer_;
  const Hash128 shared{77, 0}, own{78, 0};
  ASSERT_TRUE(w.submit(write_of(SnapshotKind::kPromptEnd, 1)));
  gate.wait_started();
  ASSERT_TRUE(w.submit(write_of(SnapshotKind::kInterval, 2, {shared, own}, {shared, own})));
  EXPECT_TRUE(w.carries_chunk(shared));
  // Names `shared` but relies on write 2 to store it.
  ASSERT_TRUE(w.submit(write_of(SnapshotKind::kMessageBoundary, 3, {shared})));
  ASSERT_TRUE(w.submit(write_of(SnapshotKind::kMessageBoundary, 4)));  // drops write 2
  EXPECT_TRUE(w.carries_chunk(shared));
  EXPECT_FALSE(w.carries_chunk(own));
  gate.release();
  w.flush();
  EXPECT_EQ(gate.dropped_, (std::vector<uint64_t>{2}));
  EXPECT_EQ(gate.chunks_, (std::vector<uint64_t>{77}));
  EXPECT_FALSE(w.carries_chunk(shared));
}

}  // namespace
}  // namespace qmlx
