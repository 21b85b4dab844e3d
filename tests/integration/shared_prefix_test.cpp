// Two requests that share a long prefix nobody has cached yet (a burst of sub-agents with one
// system prompt and tools), in flight together on two slots (issue 18, item 4): the second
// asks the first's prefill for a checkpoint where the two prompts part, waits for it, restores
// it and prefills only its own tail, and its logits are bit-identical to a cold prefill of its
// whole prompt. The slots are driven here the way the runner drives them (chunk_end, prefill,
// on_prefill_progress), so the test chooses when each step happens.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>
#include <random>
#include <thread>

#include "tests/integration/turn_harness.h"

namespace qmlx::testing {
namespace {

using namespace std::chrono_literals;

class SharedPrefixTest : public TinyModelCacheTest {
 protected:
  SharedPrefixTest() : TinyModelCacheTest("qmlx-shared-prefix", 43) {}

  void SetUp() override {
    TinyModelCacheTest::SetUp();
    cache_ = std::make_unique<PrefixCache>(
        config_, model_fingerprint(runtime_->identity, runtime_->state_layout),
        runtime_->state_layout);
    hooks_ = std::make_unique<server::PrefixCacheHooks>(*cache_, runtime_->tokenizer);
  }
  void TearDown() override {
    hooks_.reset();
    cache_.reset();
    TinyModelCacheTest::TearDown();
  }

  static std::vector<int32_t> random_ids(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> id(10, 200);
    std::vector<int32_t> ids(n);
    for (int32_t& v : ids) v = id(rng);
    return ids;
  }
  static std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }

  // The runner's prefill loop: chunks of `chunk` tokens from the session's position, cut where
  // the hooks ask; returns the positions where chunks ended.
  std::vector<int64_t> prefill(const server::PromptView& view, server::InferenceSession& session,
                               int64_t chunk) {
    std::vector<int64_t> ends;
    const int64_t total = int64_t(view.ids.size());
    for (int64_t pos = session.position(); pos < total;) {
      int64_t end = std::min(pos + chunk, total);
      end = hooks_->chunk_end(session.state_source(), pos, end);
      session.prefill(view.ids.subspan(size_t(pos), size_t(end - pos)));
      pos = end;
      ends.push_back(pos);
      hooks_->on_prefill_progress(view, session.state_source());
    }
    hooks_->on_prompt_end(view, session.state_source());
    return ends;
  }

  // Waits (bounded) until `n` requests wait for another's checkpoint.
  void expect_waiters(int n) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (hooks_->shared_prefix_waiters() != n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    ASSERT_EQ(hooks_->shared_prefix_waiters(), n);
  }

  std::vector<float> cold_logits(std::span<const int32_t> ids) {
    auto session = runtime_->new_session();
    session->prefill(ids);
    return {session->logits().begin(), session->logits().end()};
  }

  std::unique_ptr<PrefixCache> cache_;
  std::unique_ptr<server::PrefixCacheHooks> hooks_;
};

server::PromptView view_of(const std::vector<int32_t>& ids) {
  server::PromptView view;
  view.ids = ids;
  return view;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

TEST_F(SharedPrefixTest, TheSecondRequestRestoresTheFirstsCheckpointWhereTheyPart) {
  const std::vector<int32_t> shared = random_ids(700, 1);
  const std::vector<int32_t> a = concat(shared, {5, 6, 7, 8, 9, 10, 11, 12});
  const std::vector<int32_t> b = concat(shared, {9, 8, 7, 6, 5, 4, 3});
  server::PromptView view_a = view_of(a), view_b = view_of(b);
  auto session_a = runtime_->new_session();
  auto session_b = runtime_->new_session();

  // The first request finds nothing and starts prefilling: one chunk goes in.
  server::CacheLookupResult first = hooks_->lookup_and_restore(view_a, *session_a);
  ASSERT_EQ(first.cached_tokens, 0);
  EXPECT_EQ(first.shared_wait_ms, 0);
  const int64_t end = hooks_->chunk_end(session_a->state_source(), 0, 100);
  ASSERT_EQ(end, 100);
  session_a->prefill(view_a.ids.first(100));
  hooks_->on_prefill_progress(view_a, session_a->state_source());

  // The second arrives: it waits for the first instead of prefilling the same 700 tokens.
  auto second = std::async(std::launch::async,
                           [&] { return hooks_->lookup_and_restore(view_b, *session_b); });
  expect_waiters(1);
  EXPECT_EQ(second.wait_for(50ms), std::future_status::timeout);

  // The first's prefill stops exactly where the prompts part and checkpoints there.
  const std::vector<int64_t> ends = prefill(view_a, *session_a, 256);
  EXPECT_NE(std::find(ends.begin(), ends.end(), int64_t(shared.size())), ends.end());
  const server::CacheLookupResult got = second.get();
  EXPECT_EQ(got.cached_tokens, int64_t(shared.size()));
  EXPECT_EQ(got.kind, "shared_prefix");
  EXPECT_EQ(got.tier, "ram");
  EXPECT_GT(got.shared_wait_ms, 0);
  EXPECT_EQ(hooks_->shared_prefix_waiters(), 0);
  ASSERT_EQ(session_b->position(), int64_t(shared.size()));

  // Warm == cold, to the bit, for both.
  prefill(view_b, *session_b, 256);
  EXPECT_TRUE(same_bits(session_b->logits(), cold_logits(b)));
  EXPECT_TRUE(same_bits(session_a->logits(), cold_logits(a)));
}

TEST_F(SharedPrefixTest, AnIdenticalPromptWaitsForTheWholePrefillAndPrefillsNothing) {
  const std::vector<int32_t> prompt = random_ids(500, 2);
  server::PromptView view = view_of(prompt);
  auto session_a = runtime_->new_session();
  auto session_b = runtime_->new_session();
  ASSERT_EQ(hooks_->lookup_and_restore(view, *session_a).cached_tokens, 0);
  auto second =
      std::async(std::launch::async, [&] { return hooks_->lookup_and_restore(view, *session_b); });
  expect_waiters(1);
  prefill(view, *session_a, 128);
  const server::CacheLookupResult got = second.get();
  EXPECT_EQ(got.cached_tokens, int64_t(prompt.size()));
  EXPECT_EQ(got.kind, "prompt_end");
  EXPECT_TRUE(same_bits(session_b->logits(), cold_logits(prompt)));
}

TEST_F(SharedPrefixTest, AShortSharedPrefixOrAPassedPartingPointIsNotWaitedFor) {
  const std::vector<int32_t> shared = random_ids(600, 3);
  const std::vector<int32_t> a = concat(shared, random_ids(300, 4));
  // Shares less than kMinSharedPrefixTokens: no wait.
  const std::vector<int32_t> c =
      concat(std::vector<int32_t>(shared.begin(), shared.begin() + 100), random_ids(400, 5));
  server::PromptView view_a = view_of(a), view_c = view_of(c);
  auto session_a = runtime_->new_session();
  auto session_c = runtime_->new_session();
  ASSERT_EQ(hooks_->lookup_and_restore(view_a, *session_a).cached_tokens, 0);
  server::CacheLookupResult got = hooks_->lookup_and_restore(view_c, *session_c);
  EXPECT_EQ(got.shared_wait_ms, 0);
  EXPECT_EQ(got.cached_tokens, 0);

  // The first is past where the prompts part (inside its 700-token chunk): nothing to wait for.
  const std::vector<int32_t> b = concat(shared, random_ids(50, 6));
  server::PromptView view_b = view_of(b);
  auto session_b = runtime_->new_session();
  const int64_t end = hooks_->chunk_end(session_a->state_source(), 0, 700);
  ASSERT_EQ(end, 700);
  got = hooks_->lookup_and_restore(view_b, *session_b);
  EXPECT_EQ(got.shared_wait_ms, 0);
  session_a->prefill(view_a.ids.first(700));
  hooks_->on_prefill_progress(view_a, session_a->state_source());
}

TEST_F(SharedPrefixTest, AWaitEndsWhenTheClientLeavesOrTheFirstRequestStops) {
  const std::vector<int32_t> shared = random_ids(600, 7);
  const std::vector<int32_t> a = concat(shared, random_ids(40, 8));
  const std::vector<int32_t> b = concat(shared, random_ids(40, 9));
  auto session_a = runtime_->new_session();
  auto session_b = runtime_->new_session();
  server::PromptView view_a = view_of(a);
  ASSERT_EQ(hooks_->lookup_and_restore(view_a, *session_a).cached_tokens, 0);

  // The waiting client goes away: the wait ends at once, nothing restored.
  std::atomic<bool> gone{false};
  server::PromptView view_b = view_of(b);
  view_b.cancelled = [&] { return gone.load(); };
  auto second = std::async(std::launch::async,
                           [&] { return hooks_->lookup_and_restore(view_b, *session_b); });
  expect_waiters(1);
  gone = true;
  ASSERT_EQ(second.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(second.get().cached_tokens, 0);

  // The first's client goes away before the parting point: the waiter is woken and prefills.
  view_b.cancelled = nullptr;
  auto third = std::async(std::launch::async,
                          [&] { return hooks_->lookup_and_restore(view_b, *session_b); });
  expect_waiters(1);
  session_a->prefill(view_a.ids.first(64));
  hooks_->on_interrupted(view_a.ids.first(64), *session_a);
  ASSERT_EQ(third.wait_for(10s), std::future_status::ready);
  // What the first left (its interrupted checkpoint, 64 shared tokens) is all there is.
  EXPECT_LE(third.get().cached_tokens, 64);
  EXPECT_EQ(hooks_->shared_prefix_waiters(), 0);
}

}  // namespace
}  // namespace qmlx::testing
