#include "cache/restore_guard.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "base/process.h"
#include "cache_fixture.h"

namespace qmlx {
namespace {

using test::concat;
using test::make_tokens;

#if defined(__SANITIZE_ADDRESS__)
// AddressSanitizer's allocator keeps freed memory in quarantine and adds shadow memory and
// redzones, so RSS then measures the sanitizer, not the restore.
constexpr bool kPlainAllocator = false;
#else
constexpr bool kPlainAllocator = true;
#endif

// Qwen-like proportions at a small scale: 4 attention layers of 8x128 bf16 K/V heads.
StateLayout sized_layout() {
  StateLayout l = test::hybrid_layout();
  l.kv_heads = 8;
  l.head_dim = 128;
  l.conv_channels = 1024;
  l.ssm_heads = 8;
  l.ssm_key_dim = 128;
  l.ssm_value_dim = 128;
  l.vocab_size = 4096;
  l.attention_layers = {3, 7, 11, 15};
  l.recurrent_layers = {0, 1, 2};
  l.num_layers = 16;
  return l;
}

bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return bool(clear);
}

class RestoreGuard : public test::CacheTest {
 protected:
  RestoreGuard() : CacheTest(sized_layout()) { config_.chunk_tokens = 256; }
};

TEST_F(RestoreGuard, EstimateIsWithinTenPercentOfMeasuredGrowth) {
  if (!kPlainAllocator) GTEST_SKIP() << "RSS under AddressSanitizer is not the program's";
  // Big allocations straight from mmap, so freed buffers return to the system and the peak
  // of a restore is its own.
  mallopt(M_MMAP_THRESHOLD, 64 * 1024);
  std::vector<int32_t> tokens = make_tokens(61, 2048 + 100);
  {
    auto cache = open();
    test::FakeSession source = test::FakeSession::prefilled(layout_, tokens);
    ASSERT_TRUE(cache->capture(source, tokens, SnapshotKind::kPromptEnd));
    cache->flush();
  }
  auto cache = open();
  std::vector<int32_t> prompt = concat(tokens, {1});
  std::vector<ResumePoint> points = cache->lookup(prompt);
  ASSERT_EQ(points.size(), 1u);
  const RestoreEstimate estimate = cache->estimate(points[0]);
  EXPECT_EQ(estimate.state_bytes,
            2148 * layout_.kv_bytes_per_token() + layout_.recurrent_bytes() + 4096 * 4);

  test::FakeSession sink(layout_);
  if (!reset_peak_rss()) GTEST_SKIP() << "cannot reset the peak RSS here";
  const uint64_t before = current_rss_bytes();
  RestoreOutcome outcome = cache->restore_point(points[0], prompt, sink);
  const uint64_t peak = peak_rss_bytes();
  ASSERT_TRUE(outcome.ok) << outcome.detail;
  const double growth = double(peak - before);
  const double expected = double(estimate.total());
  std::printf("guard: measured %.0f bytes, estimated %.0f\n", growth, expected);
  EXPECT_LT(std::abs(growth - expected), 0.10 * expected)
      << "measured " << growth << " bytes, estimated " << expected;
}

TEST_F(RestoreGuard, RefusesWhatDoesNotFitAndSaysSo) {
  config_.chunk_tokens = test::kChunkTokens;
  config_.restore_guard_enabled = true;
  config_.guard_margin_mb = 1;
  std::vector<int32_t> tokens = make_tokens(62, 100);
  auto cache = open();
  capture(*cache, tokens, SnapshotKind::kPromptEnd);
  const uint64_t needed = cache->estimate(cache->lookup(concat(tokens, {1}))[0]).total();
  cache->set_available_memory_source([&] { return (1ull << 20) + needed - 1; });
  RestoreResult r = restore_and_check(*cache, concat(tokens, {1}));
  EXPECT_FALSE(r.hit);
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected[0].reason, RejectReason::kGuard);
  EXPECT_EQ(cache->stats().restore_rejected.at("guard"), 1u);
  EXPECT_EQ(cache->stats().quarantined, 0u);  // nothing was wrong with the files
  cache->set_available_memory_source([&] { return (1ull << 20) + needed; });
  EXPECT_TRUE(restore_and_check(*cache, concat(tokens, {1})).hit);
}

TEST(RestoreEstimate, FollowsTheShapes) {
  StateLayout l = sized_layout();
  RestoreEstimate chunks_only = estimate_restore(l, 256, 1024, false, 2);
  RestoreEstimate with_snapshot = estimate_restore(l, 256, 1024, true, 2);
  EXPECT_EQ(chunks_only.state_bytes, with_snapshot.state_bytes);
  EXPECT_GT(with_snapshot.read_buffer_bytes, chunks_only.read_buffer_bytes);
  // Two chunk files in flight, each 256 tokens of K/V plus its header and tokens.
  EXPECT_EQ(chunks_only.read_buffer_bytes, 2 * (256 * l.kv_bytes_per_token() + 128 + 256 * 4));
  EXPECT_FALSE(check_restore_guard(chunks_only, chunks_only.total() + 99, 100).allowed);
  EXPECT_TRUE(check_restore_guard(chunks_only, chunks_only.total() + 100, 100).allowed);
}

}  // namespace
}  // namespace qmlx
