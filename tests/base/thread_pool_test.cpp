#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <vector>

namespace qmlx {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  ThreadPool pool(3);
  for (size_t n : {1u, 2u, 3u, 7u, 1000u}) {
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_for(n, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) hits[i]++;
    });
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  }
}

TEST(ThreadPool, NestedCallsRunSeriallyWithoutDeadlock) {
  ThreadPool pool(2);
  std::atomic<int> total{0};
  pool.parallel_for(4, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i)
      pool.parallel_for(10, [&](size_t b2, size_t e2) { total += static_cast<int>(e2 - b2); });
  });
  EXPECT_EQ(total.load(), 40);
}

TEST(ThreadPool, RespectsMinimumGrain) {
  ThreadPool pool(2);
  std::atomic<int> calls{0};
  pool.parallel_for(5, [&](size_t, size_t) { calls++; }, 100);
  EXPECT_EQ(calls.load(), 1);
}

TEST(ThreadPool, ChunksCoverEveryIndexOnceInChunkSizedPieces) {
  ThreadPool pool(3);
  for (size_t n : {0u, 1u, 5u, 64u, 1001u})
    for (size_t chunk : {1u, 7u, 64u, 5000u}) {
      std::vector<std::atomic<int>> hits(n);
      std::atomic<int> bad_pieces{0};
      pool.parallel_chunks(n, chunk, [&](size_t b, size_t e) {
        // Every piece starts on a chunk boundary and is a whole chunk, or the tail.
        if (b % chunk != 0 || (e - b != chunk && e != n) || e <= b) bad_pieces++;
        for (size_t i = b; i < e; ++i) hits[i]++;
      });
      EXPECT_EQ(bad_pieces.load(), 0) << "n=" << n << " chunk=" << chunk;
      for (size_t i = 0; i < n; ++i)
        EXPECT_EQ(hits[i].load(), 1) << "n=" << n << " chunk=" << chunk << " i=" << i;
    }
}

TEST(ThreadPool, ChunksGoToWhicheverThreadIsFree) {
  // One thread held up in its first chunk: the other takes all the rest meanwhile, instead of
  // stopping at a fixed share (with a fixed half, 50 chunks would wait for the hold-up).
  ThreadPool pool(2);
  std::atomic<bool> held{false};
  std::atomic<int> done{0}, done_during_hold{-1};
  pool.parallel_chunks(100, 1, [&](size_t, size_t) {
    if (!held.exchange(true)) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      while (std::chrono::steady_clock::now() < until && done.load() < 99) {
      }
      done_during_hold = done.load();
      return;
    }
    done++;
  });
  EXPECT_EQ(done_during_hold.load(), 99);
  EXPECT_EQ(done.load(), 99);
}

TEST(ThreadPool, NestedChunksRunSerially) {
  ThreadPool pool(2);
  std::atomic<int> total{0};
  pool.parallel_chunks(4, 1, [&](size_t, size_t) {
    pool.parallel_chunks(10, 3, [&](size_t b, size_t e) { total += static_cast<int>(e - b); });
  });
  EXPECT_EQ(total.load(), 40);
}

}  // namespace
}  // namespace qmlx
