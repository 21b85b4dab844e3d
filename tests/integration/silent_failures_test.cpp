// The three silent failures of the mission, each reproduced on the real request path:
//   1. a per-turn id in the system prompt: a MISS whose divergence line names the position of
//      the id and shows its text on both sides;
//   2. a reply interrupted by a disconnect: the next turn, which contains the partial reply,
//      hits past it (the `interrupted` snapshot), which holds exactly what the client received
//      even when generation ran ahead of it;
//   3. a flood of `interval` snapshots under a small disk cap never evicts the snapshot the
//      next turn needs.
#include <gtest/gtest.h>

#include "server/scheduling/canonical_history.h"
#include "tests/integration/turn_harness.h"

namespace qmlx::testing {
namespace {

using ordered_json = nlohmann::ordered_json;

class SilentFailures : public TinyModelCacheTest {
 protected:
  SilentFailures() : TinyModelCacheTest("qmlx-silent", 21) {}
};

ordered_json conversation(const std::string& system, const std::string& user) {
  return ordered_json::array(
      {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", user}}});
}

TEST_F(SilentFailures, PerTurnIdInSystemPromptIsExplained) {
  TurnHarness warm(runtime_, config_);
  const std::string rest =
      " You are a coding agent working in a large repository with many tools available to you.";
  const std::string user = "Please read the build log and tell me why the tests fail.";
  TurnResult first = warm.chat(conversation("Session 7f3a9c21." + rest, user), {}, 4);
  warm.idle();
  TurnResult second = warm.chat(conversation("Session 0b8e4d57." + rest, user), {}, 4);

  EXPECT_EQ(second.stats.cached_tokens, 0) << "nothing before the id was worth restoring";
  const std::string& line = second.stats.cache.divergence;
  ASSERT_FALSE(line.empty()) << "a miss after a long shared run must be explained";
  size_t split = 0;
  while (first.prompt[split] == second.prompt[split]) ++split;
  EXPECT_NE(line.find("pos=" + std::to_string(split) + " "), std::string::npos) << line;
  EXPECT_NE(line.find("7f3a9c21"), std::string::npos) << line;  // what the cache has
  EXPECT_NE(line.find("0b8e4d57"), std::string::npos) << line;  // what came in
  EXPECT_NE(line.find("Session"), std::string::npos) << line;   // the text before the split
  EXPECT_GE(warm.cache()->stats().divergences, 1u);
}

TEST_F(SilentFailures, InterruptedReplyIsKept) {
  TurnHarness warm(runtime_, config_);
  TurnHarness cold(runtime_, std::nullopt);
  std::vector<int32_t> prompt = runtime_->tokenizer->encode(
      "<|im_start|>user\nWrite a long story about a compiler.<|im_end|>\n<|im_start|>assistant\n");
  TurnResult cut = warm.complete(prompt, 40, /*cancel_after=*/6);
  ASSERT_EQ(cut.finish, server::FinishReason::kCancelled);
  ASSERT_GE(cut.generated.size(), 6u);
  ASSERT_LT(cut.generated.size(), 40u);
  // The agent keeps what it received and continues the conversation after it.
  std::vector<int32_t> next = prompt;
  next.insert(next.end(), cut.generated.begin(), cut.generated.begin() + cut.delivered);
  std::vector<int32_t> more = runtime_->tokenizer->encode("<|im_end|>\n<|im_start|>user\nGo on.");
  next.insert(next.end(), more.begin(), more.end());
  // Another client's request in between: the engine's session no longer holds the cut reply,
  // so it comes back from the `interrupted` snapshot.
  warm.complete(runtime_->tokenizer->encode("Another client's prompt."), 2);
  TurnResult warm_next = warm.complete(next, 5);
  EXPECT_GT(warm_next.stats.cached_tokens, int64_t(prompt.size()))
      << "restored " << warm_next.stats.cached_tokens << " (" << warm_next.stats.cache.kind << ")";
  EXPECT_EQ(warm_next.stats.cache.kind, "interrupted");
  EXPECT_EQ(warm_next.generated, cold.complete(next, 5).generated);
}

// Issue 17 row 14: generation runs ahead of a client that is going away (here 5 output events
// were generated that never reached it). The `interrupted` checkpoint holds exactly what the
// client received, so a retry that carries the partial reply restores all of it.
TEST_F(SilentFailures, InterruptedCheckpointHoldsWhatTheClientReceived) {
  TurnHarness warm(runtime_, config_);
  TurnHarness cold(runtime_, std::nullopt);
  std::vector<int32_t> prompt = runtime_->tokenizer->encode(
      "<|im_start|>user\nWrite a long story about a linker.<|im_end|>\n<|im_start|>assistant\n");
  TurnResult cut = warm.complete(prompt, 40, /*cancel_after=*/6, /*unread=*/5);
  ASSERT_EQ(cut.finish, server::FinishReason::kCancelled);
  ASSERT_GE(cut.delivered, 6);
  ASSERT_GE(int64_t(cut.generated.size()), cut.delivered + 5) << "the engine did not run ahead";
  // What the client received is exactly the text of the delivered tokens.
  const std::vector<int32_t> received(cut.generated.begin(), cut.generated.begin() + cut.delivered);
  EXPECT_EQ(cut.reply.content, runtime_->tokenizer->decode(received));

  auto retry_with = [&](const std::string& next_message) {
    std::vector<int32_t> retry = prompt;
    retry.insert(retry.end(), received.begin(), received.end());
    std::vector<int32_t> more =
        runtime_->tokenizer->encode("<|im_end|>\n<|im_start|>user\n" + next_message);
    retry.insert(retry.end(), more.begin(), more.end());
    return retry;
  };
  const int64_t whole_reply = int64_t(prompt.size()) + cut.delivered;
  // The engine's session holds the delivered reply: the next request continues from it at once.
  std::vector<int32_t> retry = retry_with("Go on.");
  TurnResult live = warm.complete(retry, 5);
  EXPECT_EQ(live.stats.cached_tokens, whole_reply)
      << live.stats.cache.kind << " " << live.stats.cache.tier;
  EXPECT_EQ(live.generated, cold.complete(retry, 5).generated);
  // After another client's request, it comes back from the `interrupted` snapshot, whole.
  warm.complete(runtime_->tokenizer->encode("Another client's prompt."), 2);
  retry = retry_with("Continue from there, please.");
  TurnResult warm_retry = warm.complete(retry, 5);
  EXPECT_EQ(warm_retry.stats.cache.kind, "interrupted");
  EXPECT_EQ(warm_retry.stats.cached_tokens, whole_reply);
  EXPECT_EQ(warm_retry.generated, cold.complete(retry, 5).generated);
}

TEST_F(SilentFailures, IntervalFloodNeverEvictsTheNextTurnsSnapshot) {
  config_.memory_prefix_cache = false;  // the disk tier alone, under pressure
  config_.checkpoint_interval_tokens = 1;
  config_.writer_queue_capacity = 64;  // every capture reaches the store: a flood, not drops
  config_.disk_cache_max_gb = 160.0 * 1024 / double(1ull << 30);  // 160 KiB
  TurnHarness warm(runtime_, config_);
  TurnHarness cold(runtime_, std::nullopt);
  ordered_json messages =
      conversation("You are a coding agent.", "Explain the build system of this repository.");
  TurnResult first = warm.chat(messages, {}, 48);
  warm.cache()->flush();
  CacheStats after_flood = warm.cache()->stats();
  uint64_t evicted = 0;
  for (const auto& [reason, n] : after_flood.evictions) evicted += n;
  ASSERT_GT(after_flood.checkpoint_writes["interval"], 20u);
  ASSERT_GT(evicted, 0u) << "the cap must have been under pressure";
  // The next turn edits nothing before the last user message: it needs the message boundary.
  const int64_t boundary =
      runtime_->render_chat(messages, {}, true, ordered_json::object()).last_message_end;
  messages.push_back(server::assistant_message(first.reply));
  messages.push_back({{"role", "user"}, {"content", "And the tests?"}});
  TurnResult second = warm.chat(messages, {}, 4);
  EXPECT_GE(second.stats.cached_tokens, boundary) << second.stats.cache.kind;
  EXPECT_EQ(second.generated, cold.chat(messages, {}, 4).generated);
}

}  // namespace
}  // namespace qmlx::testing
