// PrefixCache::restore with a sink that already holds the prompt's first tokens (the engine's
// Session kept warm between requests, RestoreOptions::live), and the divergence line's
// `unrestored` reason, which says why a shared run past what was restored gave nothing deeper
// (so a MISS never comes with a divergence line that seems to contradict it).
#include <gtest/gtest.h>

#include "cache_fixture.h"

namespace qmlx {
namespace {

using test::concat;
using test::FakeSession;
using test::make_tokens;
using test::prefix;

class LiveRestore : public test::CacheTest {};

TEST_F(LiveRestore, ASinkHoldingAsMuchAsTheDeepestPointIsKeptAndNothingIsRead) {
  std::vector<int32_t> turn = make_tokens(81, 100);
  auto cache = open();
  capture(*cache, prefix(turn, 60), SnapshotKind::kMessageBoundary);
  std::vector<int32_t> prompt = concat(turn, make_tokens(82, 20));
  FakeSession sink = FakeSession::prefilled(layout_, prefix(prompt, 100));
  RestoreResult r = cache->restore(prompt, sink, {.live = 100});
  EXPECT_TRUE(r.hit);
  EXPECT_EQ(r.tier, kSessionTier);
  EXPECT_EQ(r.cached_tokens, 100);
  EXPECT_EQ(r.bytes_read, 0u);
  EXPECT_TRUE(sink.same_state(FakeSession::prefilled(layout_, prefix(prompt, 100))));
  EXPECT_EQ(cache->stats().cached_tokens.at("session"), 100u);
}

TEST_F(LiveRestore, ADeeperResumePointIsRestoredOverTheSink) {
  std::vector<int32_t> turn = make_tokens(83, 100);
  auto cache = open();
  capture(*cache, turn, SnapshotKind::kMessageBoundary);
  std::vector<int32_t> prompt = concat(turn, make_tokens(84, 20));
  FakeSession sink = FakeSession::prefilled(layout_, prefix(prompt, 40));
  RestoreResult r = cache->restore(prompt, sink, {.live = 40});
  EXPECT_TRUE(r.hit);
  EXPECT_EQ(r.tier, "disk");
  EXPECT_EQ(r.cached_tokens, 100);
  EXPECT_TRUE(sink.same_state(FakeSession::prefilled(layout_, turn)));
}

TEST_F(LiveRestore, ADeeperPointRefusedBeforeTouchingTheSinkLeavesTheSessionInUse) {
  config_.restore_guard_enabled = true;
  std::vector<int32_t> turn = make_tokens(85, 100);
  auto cache = open();
  capture(*cache, turn, SnapshotKind::kMessageBoundary);
  cache->set_available_memory_source([] { return uint64_t(0); });
  std::vector<int32_t> prompt = concat(turn, make_tokens(86, 20));
  FakeSession sink = FakeSession::prefilled(layout_, prefix(prompt, 40));
  RestoreResult r = cache->restore(prompt, sink, {.live = 40});
  EXPECT_TRUE(r.hit);
  EXPECT_EQ(r.tier, kSessionTier);
  EXPECT_EQ(r.cached_tokens, 40);
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected[0].reason, RejectReason::kGuard);
  EXPECT_TRUE(sink.same_state(FakeSession::prefilled(layout_, prefix(prompt, 40))));
}

TEST_F(LiveRestore, QuietRestoresCountNoHitOrMissAndExplainNothing) {
  std::vector<int32_t> turn = make_tokens(87, 100);
  auto cache = open();
  capture(*cache, turn, SnapshotKind::kMessageBoundary);
  FakeSession sink(layout_);
  std::vector<int32_t> other = concat(prefix(turn, 90), make_tokens(88, 30));
  RestoreResult r = cache->restore(other, sink, {.quiet = true});
  EXPECT_FALSE(r.hit);
  EXPECT_FALSE(r.divergence);
  CacheStats stats = cache->stats();
  EXPECT_EQ(stats.hits, 0u);
  EXPECT_TRUE(stats.misses.empty());
}

class Unrestored : public test::CacheTest {};

TEST_F(Unrestored, AMissSharingARunWithNoSnapshotInsideItSaysSo) {
  // A hybrid model resumes only at snapshots: sharing 80 of a 100-token snapshot's tokens
  // restores nothing.
  std::vector<int32_t> turn = make_tokens(89, 100);
  auto cache = open();
  capture(*cache, turn, SnapshotKind::kPromptEnd);
  RestoreResult r = restore_and_check(*cache, concat(prefix(turn, 80), make_tokens(90, 40)));
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.miss_reason, "no_candidate");
  ASSERT_TRUE(r.divergence);
  EXPECT_EQ(r.divergence->position, 80);
  EXPECT_EQ(r.divergence->unrestored, "no_resume_point");
  const std::string line =
      format_divergence(*r.divergence, [](std::span<const int32_t>) { return std::string("x"); });
  EXPECT_NE(line.find("pos=80 restored=0 unrestored=no_resume_point "), std::string::npos) << line;
}

TEST_F(Unrestored, AMissWhoseResumePointWasRefusedNamesTheRefusal) {
  config_.restore_guard_enabled = true;
  std::vector<int32_t> turn = make_tokens(91, 100);
  auto cache = open();
  capture(*cache, turn, SnapshotKind::kMessageBoundary);
  cache->set_available_memory_source([] { return uint64_t(0); });
  RestoreResult r = restore_and_check(*cache, concat(turn, make_tokens(92, 30)));
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.miss_reason, "rejected");
  ASSERT_TRUE(r.divergence);
  EXPECT_EQ(r.divergence->position, 100);
  EXPECT_EQ(r.divergence->unrestored, "rejected:guard");
}

TEST_F(Unrestored, AHitShortOfTheSharedRunSaysWhyItStoppedThere) {
  std::vector<int32_t> turn = make_tokens(93, 200);
  auto cache = open();
  capture(*cache, prefix(turn, 32), SnapshotKind::kUserStart);
  capture(*cache, turn, SnapshotKind::kPromptEnd);
  RestoreResult r = restore_and_check(*cache, concat(prefix(turn, 150), make_tokens(94, 20)));
  EXPECT_TRUE(r.hit);
  EXPECT_EQ(r.cached_tokens, 32);
  ASSERT_TRUE(r.divergence);
  EXPECT_EQ(r.divergence->position, 150);
  EXPECT_EQ(r.divergence->unrestored, "no_resume_point");
}

}  // namespace
}  // namespace qmlx
