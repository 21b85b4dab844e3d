#include "cache/eviction.h"

#include <gtest/gtest.h>

#include "cache_fixture.h"

namespace qmlx {
namespace {

using test::concat;
using test::make_tokens;
using test::prefix;

Hash128 h(uint64_t n) { return Hash128{n, 0}; }

SnapshotEntry entry(uint64_t id, SnapshotKind kind, int64_t last_used, int64_t created,
                    std::vector<Hash128> chunks, bool pinned = false) {
  SnapshotEntry e;
  e.header.id = h(id);
  e.header.base = h(1000 + id);
  e.header.kind = kind;
  e.header.created_ms = created;
  e.chunks = std::move(chunks);
  e.bytes = 100;
  e.last_used_ms = last_used;
  e.pinned = pinned;
  e.on_disk = true;
  return e;
}

// Four snapshots over five chunks (chunk 5 named by none), one quarantined file, one foreign
// store. Snapshot 1 (message_boundary) is the least recently used and the oldest.
CacheIndex sample_index(bool hybrid) {
  CacheIndex index(Hash128{9, 9}, 16, hybrid);
  for (uint64_t c = 1; c <= 5; ++c) index.add_chunk(h(c), ChunkEntry{10, int64_t(c), true});
  index.add_snapshot(entry(1, SnapshotKind::kMessageBoundary, 10, 1, {h(1), h(2)}));
  index.add_snapshot(entry(2, SnapshotKind::kInterval, 40, 4, {h(1), h(2), h(3)}));
  index.add_snapshot(entry(3, SnapshotKind::kPrefillProgress, 30, 3, {h(4)}));
  index.add_snapshot(entry(4, SnapshotKind::kPromptEnd, 20, 2, {h(1)}, /*pinned=*/true));
  return index;
}

std::vector<std::string> order(const std::vector<EvictionStep>& steps) {
  std::vector<std::string> out;
  for (const EvictionStep& s : steps) {
    switch (s.target) {
      case EvictionStep::Target::kQuarantined:
        out.push_back("q");
        break;
      case EvictionStep::Target::kForeignStore:
        out.push_back("f");
        break;
      case EvictionStep::Target::kChunk:
        out.push_back("c" + std::to_string(s.id.low));
        break;
      case EvictionStep::Target::kSnapshot:
        out.push_back("s" + std::to_string(s.id.low));
        break;
    }
  }
  return out;
}

EvictionInputs inputs(const CacheIndex& index) {
  return EvictionInputs{&index, {{"quarantine/x", 5}}, {{"/cache/other", 50}}, {}};
}

TEST(EvictionPlan, UnmatchableFirstFreesTheUnrestorableThenLowValueKinds) {
  CacheIndex index = sample_index(/*hybrid=*/true);
  auto steps = plan_eviction(inputs(index), EvictionPolicy::kUnmatchableFirst, 1'000'000);
  // Quarantine, foreign store, chunk 5 (no snapshot names it); then interval (2) and
  // prefill_progress (3) before message_boundary (1), each with the chunks it orphans;
  // pinned snapshot 4 stays, and so does chunk 1 that it names.
  EXPECT_EQ(order(steps),
            (std::vector<std::string>{"q", "f", "c5", "s2", "c3", "s3", "c4", "s1", "c2"}));
  EXPECT_EQ(steps[0].reason, "quarantine");
  EXPECT_EQ(steps[1].reason, "foreign_fingerprint");
  EXPECT_EQ(steps[2].reason, "unreferenced_chunk");
  EXPECT_EQ(steps[3].reason, "low_value");
  EXPECT_EQ(steps[4].reason, "orphaned_chunk");
}

TEST(EvictionPlan, StopsOnceEnoughIsFreed) {
  CacheIndex index = sample_index(true);
  EXPECT_EQ(order(plan_eviction(inputs(index), EvictionPolicy::kUnmatchableFirst, 60)),
            (std::vector<std::string>{"q", "f", "c5"}));
}

TEST(EvictionPlan, LruAndOldestIgnoreKinds) {
  CacheIndex index = sample_index(true);
  EXPECT_EQ(order(plan_eviction(inputs(index), EvictionPolicy::kLru, 1'000'000)),
            (std::vector<std::string>{"q", "s1", "s3", "c4", "s2", "c2", "c3", "c5", "f"}));
  // Same order for oldest here, except that creation time decides (1 < 3 < 4).
  EXPECT_EQ(order(plan_eviction(inputs(index), EvictionPolicy::kOldest, 1'000'000))[1], "s1");
}

TEST(EvictionPlan, AttentionOnlyChunksStayUntilSnapshotsAreGone) {
  CacheIndex index = sample_index(/*hybrid=*/false);
  EXPECT_EQ(order(plan_eviction(inputs(index), EvictionPolicy::kUnmatchableFirst, 1'000'000)),
            (std::vector<std::string>{"q", "f", "s2", "s3", "s1", "c2", "c3", "c4", "c5"}));
}

class EvictionFlood : public test::CacheTest {
 protected:
  // A message_boundary snapshot, then a long generation checkpointed at every chunk as
  // `interval` snapshots, under a cap that holds a fraction of them. Returns the cache.
  std::unique_ptr<PrefixCache> flood() {
    int64_t clock = 0;
    config_.disk_cache_max_gb = 120.0 * 1024 / double(1ull << 30);  // 120 KiB
    auto cache = open();
    cache->set_clock([&clock] { return ++clock; });
    capture(*cache, boundary_, SnapshotKind::kMessageBoundary);
    std::vector<int32_t> generation = concat(boundary_, make_tokens(52, 1000));
    for (size_t n = 48; n <= generation.size(); n += 16) {
      capture(*cache, prefix(generation, n), SnapshotKind::kInterval);
    }
    cache->set_clock([] { return int64_t(1) << 40; });
    return cache;
  }

  std::vector<int32_t> boundary_ = make_tokens(51, 40);
  std::vector<int32_t> next_turn_ = concat(boundary_, make_tokens(53, 25));
};

TEST_F(EvictionFlood, IntervalSnapshotsNeverEvictTheMessageBoundary) {
  auto cache = flood();
  CacheStats stats = cache->stats();
  EXPECT_GT(stats.evictions.at("low_value"), 10u);
  EXPECT_LE(stats.disk_cache_bytes, config_.disk_cap_bytes());
  RestoreResult r = restore_and_check(*cache, next_turn_);
  ASSERT_TRUE(r.hit);
  EXPECT_EQ(r.point.kind, SnapshotKind::kMessageBoundary);
  EXPECT_EQ(r.cached_tokens, 40);
}

TEST_F(EvictionFlood, PlainLruWouldHaveLostIt) {
  config_.eviction_policy = EvictionPolicy::kLru;
  auto cache = flood();
  EXPECT_FALSE(restore_and_check(*cache, next_turn_).hit);
}

TEST_F(EvictionFlood, PinnedSnapshotSurvivesAnyPolicy) {
  config_.eviction_policy = EvictionPolicy::kOldest;
  {
    auto cache = open();
    capture(*cache, boundary_, SnapshotKind::kMessageBoundary);
    ASSERT_TRUE(cache->pin(cache->list().at(0).id, true).ok());
  }
  auto cache = flood();
  EXPECT_TRUE(restore_and_check(*cache, next_turn_).hit);
}

}  // namespace
}  // namespace qmlx
