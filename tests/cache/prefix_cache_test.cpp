#include "cache/prefix_cache.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "cache_fixture.h"

namespace qmlx {
namespace {

using test::concat;
using test::make_tokens;
using test::prefix;

size_t files_under(const std::string& dir) {
  if (!std::filesystem::exists(dir)) return 0;
  size_t n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

class HybridCache : public test::CacheTest {};

TEST_F(HybridCache, WarmRestoreAfterReopenEqualsCapturedState) {
  std::vector<int32_t> turn = make_tokens(1, 75);
  {
    auto cache = open();
    ASSERT_TRUE(capture(*cache, turn, SnapshotKind::kMessageBoundary));
  }
  auto cache = open();
  RestoreResult r = restore_and_check(*cache, concat(turn, make_tokens(2, 15)));
  ASSERT_TRUE(r.hit);
  EXPECT_EQ(r.cached_tokens, 75);
  EXPECT_EQ(r.tier, "disk");
  EXPECT_EQ(r.point.kind, SnapshotKind::kMessageBoundary);
  EXPECT_EQ(cache->stats().hits, 1u);
  EXPECT_EQ(cache->stats().cached_tokens.at("disk"), 75u);
}

TEST_F(HybridCache, PicksTheDeepestSnapshotThatPrefixesThePrompt) {
  std::vector<int32_t> convo = make_tokens(3, 90);
  auto cache = open();
  capture(*cache, prefix(convo, 20), SnapshotKind::kUserStart);
  capture(*cache, prefix(convo, 50), SnapshotKind::kMessageBoundary);
  capture(*cache, concat(prefix(convo, 60), make_tokens(4, 10)), SnapshotKind::kGenerationEnd);
  std::vector<ResumePoint> points = cache->lookup(convo);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].position, 50);
  EXPECT_EQ(points[1].position, 20);
  EXPECT_EQ(restore_and_check(*cache, convo).cached_tokens, 50);
}

TEST_F(HybridCache, ExactLengthIsUsableOnlyWithStoredLogits) {
  std::vector<int32_t> prompt = make_tokens(5, 40);
  auto cache = open();
  test::FakeSession no_logits = test::FakeSession::prefilled(layout_, prompt);
  no_logits.set_logits({});
  ASSERT_TRUE(cache->capture(no_logits, prompt, SnapshotKind::kPromptEnd));
  cache->flush();
  EXPECT_TRUE(cache->lookup(prompt).empty());
  EXPECT_EQ(cache->lookup(concat(prompt, {7})).size(), 1u);

  std::vector<int32_t> other = make_tokens(6, 40);
  capture(*cache, other, SnapshotKind::kPromptEnd);
  RestoreResult r = restore_and_check(*cache, other);
  ASSERT_TRUE(r.hit);
  EXPECT_EQ(r.cached_tokens, 40);
}

TEST_F(HybridCache, TurnsShareChunksAndWriteOnlyNewOnes) {
  std::vector<int32_t> turn1 = make_tokens(7, 40);
  std::vector<int32_t> turn2 = concat(turn1, make_tokens(8, 30));
  auto cache = open();
  capture(*cache, turn1, SnapshotKind::kMessageBoundary);
  capture(*cache, turn2, SnapshotKind::kMessageBoundary);
  const std::string store = cache->store_dir();
  EXPECT_EQ(files_under(store + "/chunks"), 70u / test::kChunkTokens);
  EXPECT_EQ(files_under(store + "/snapshots"), 2u);
  EXPECT_EQ(cache->stats().checkpoint_writes.at("message_boundary"), 2u);
  // Capturing the same point again is a no-op.
  EXPECT_FALSE(capture(*cache, turn2, SnapshotKind::kInterval));
}

TEST_F(HybridCache, MissesMidChunkDivergenceAndExplainsIt) {
  std::vector<int32_t> turn = make_tokens(9, 75);
  auto cache = open();
  capture(*cache, turn, SnapshotKind::kMessageBoundary);
  std::vector<int32_t> edited = turn;
  edited[70] += 1;  // inside the snapshot's tail, after four shared chunks
  RestoreResult r = restore_and_check(*cache, edited);
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.miss_reason, "no_candidate");
  ASSERT_TRUE(r.divergence);
  EXPECT_EQ(r.divergence->position, 70);
  EXPECT_EQ(r.divergence->snapshot_kind, SnapshotKind::kMessageBoundary);
  EXPECT_EQ(r.divergence->cached_after.front(), turn[70]);
  EXPECT_EQ(r.divergence->incoming_after.front(), edited[70]);
  EXPECT_EQ(r.divergence->before, std::vector<int32_t>(turn.begin() + 30, turn.begin() + 70));
  EXPECT_EQ(cache->stats().divergences, 1u);
}

TEST_F(HybridCache, MemoryTierServesRepeatsAndWorksWithoutDisk) {
  config_.memory_prefix_cache = true;
  std::vector<int32_t> turn = make_tokens(10, 50);
  {
    auto cache = open();
    capture(*cache, turn, SnapshotKind::kPromptEnd);
    EXPECT_EQ(restore_and_check(*cache, turn).tier, "ram");
  }
  auto reopened = open();
  EXPECT_EQ(restore_and_check(*reopened, turn).tier, "disk");
  EXPECT_EQ(restore_and_check(*reopened, turn).tier, "ram");

  config_.disk_kv_cache = false;
  config_.disk_cache_dir = dir_.path() + "/unused";
  auto ram_only = open();
  capture(*ram_only, make_tokens(11, 50), SnapshotKind::kPromptEnd);
  EXPECT_EQ(restore_and_check(*ram_only, make_tokens(11, 50)).tier, "ram");
  EXPECT_FALSE(std::filesystem::exists(config_.disk_cache_dir));
}

TEST_F(HybridCache, BothTiersOffReusesNothing) {
  config_.memory_prefix_cache = false;
  config_.disk_kv_cache = false;
  auto cache = open();
  std::vector<int32_t> turn = make_tokens(12, 40);
  EXPECT_FALSE(capture(*cache, turn, SnapshotKind::kPromptEnd));
  RestoreResult r = restore_and_check(*cache, turn);
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.miss_reason, "disabled");
}

TEST_F(HybridCache, AnotherFingerprintsStoreIsNeverRestored) {
  std::vector<int32_t> turn = make_tokens(13, 60);
  std::string first_store;
  {
    auto cache = open();
    capture(*cache, turn, SnapshotKind::kMessageBoundary);
    first_store = cache->store_dir();
  }
  // Another model: its own folder, nothing to restore.
  const Hash128 other = model_fingerprint("another model", layout_);
  PrefixCache other_cache(config_, other, layout_);
  EXPECT_FALSE(restore_and_check(other_cache, turn).hit);
  // Even with the first model's files copied into its folder, nothing is restored.
  std::filesystem::copy(
      first_store, other_cache.store_dir(),
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
  PrefixCache reopened(config_, other, layout_);
  EXPECT_FALSE(restore_and_check(reopened, turn).hit);
  EXPECT_TRUE(reopened.list().empty());
}

TEST_F(HybridCache, AdminListsPinsVerifiesAndRemoves) {
  auto cache = open();
  capture(*cache, make_tokens(14, 40), SnapshotKind::kMessageBoundary);
  capture(*cache, make_tokens(15, 20), SnapshotKind::kInterval);
  std::vector<SnapshotListing> listing = cache->list();
  ASSERT_EQ(listing.size(), 2u);
  const Hash128 id = listing[0].id;
  ASSERT_TRUE(cache->pin(id, true).ok());
  EXPECT_TRUE(cache->inspect(id)->pinned);
  {
    auto reopened = open();  // pins persist
    EXPECT_TRUE(reopened->inspect(id)->pinned);
  }
  for (const VerifyReport& report : cache->verify_all()) EXPECT_TRUE(report.ok) << report.detail;
  ASSERT_TRUE(cache->remove(id).ok());
  EXPECT_FALSE(cache->inspect(id));
  EXPECT_EQ(cache->remove(id).code(), Status::Code::kNotFound);
  ASSERT_TRUE(cache->clear().ok());
  EXPECT_TRUE(cache->list().empty());
  EXPECT_EQ(files_under(cache->store_dir()), 0u);
}

class AttentionOnlyCache : public test::CacheTest {
 protected:
  AttentionOnlyCache() : CacheTest(test::attention_only_layout()) {}
};

TEST_F(AttentionOnlyCache, ResumesAtAnyStoredChunkBoundary) {
  std::vector<int32_t> turn = make_tokens(16, 75);
  auto cache = open();
  capture(*cache, turn, SnapshotKind::kMessageBoundary);
  std::vector<int32_t> edited = turn;
  edited[60] += 1;
  RestoreResult r = restore_and_check(*cache, edited);
  ASSERT_TRUE(r.hit);
  EXPECT_FALSE(r.point.is_snapshot);
  EXPECT_EQ(r.cached_tokens, 48);
  // A boundary at the prompt's full length has no logits and is not offered.
  EXPECT_EQ(restore_and_check(*cache, prefix(turn, 64)).cached_tokens, 48);
  // The snapshot itself still wins when the prompt extends it.
  EXPECT_EQ(restore_and_check(*cache, concat(turn, {1, 2})).cached_tokens, 75);
}

}  // namespace
}  // namespace qmlx
