// The engine's live Session on the real request path (issue 14, items 5 and 6), on a tiny
// random Qwen3.5 model, every warm answer checked token for token against a cold one:
//  - a tool loop whose client answers at once (the next request arrives before the idle
//    pre-fill of the reply's history took its first step) prefills only the new messages;
//  - a prompt that extends what the Session holds continues from it (tier "session");
//  - an agent that drops a reminder block from its message next turn (Qwen Code's date block)
//    restores from the `edit_point` snapshot where that block began.
#include <gtest/gtest.h>

#include <algorithm>

#include "server/scheduling/canonical_history.h"
#include "tests/integration/turn_harness.h"

namespace qmlx::testing {
namespace {

using ordered_json = nlohmann::ordered_json;

class LiveSessionTest : public TinyModelCacheTest {
 protected:
  LiveSessionTest() : TinyModelCacheTest("qmlx-live-session", 41) {}

  std::vector<int32_t> prompt_ids(const ordered_json& messages) const {
    return runtime_->render_chat(messages, ordered_json::array(), true, ordered_json::object()).ids;
  }
};

bool begins_with(const std::vector<int32_t>& ids, const std::vector<int32_t>& head) {
  return head.size() <= ids.size() && std::equal(head.begin(), head.end(), ids.begin());
}

TEST_F(LiveSessionTest, ToolLoopWithNoPausePrefillsOnlyTheNewMessages) {
  TurnHarness warm(runtime_, config_);
  TurnHarness cold(runtime_, std::nullopt);
  ordered_json messages = ordered_json::array(
      {{{"role", "system"}, {"content", "You are a coding agent. Use the tools."}},
       {{"role", "user"}, {"content", "Run the tests and fix what fails."}}});
  TurnResult turn = warm.chat(messages, {}, 24);
  int64_t prefilled = 0;
  int64_t added = 0;
  for (int i = 0; i < 4; ++i) {
    // The reply as the next turn renders it, up to the tool result the client appends (the
    // random model calls no tool, so the tool-role rendering is the second one).
    const auto histories = server::render_canonical_histories(
        *runtime_, messages, ordered_json::array(), ordered_json::object(), turn.reply);
    messages.push_back(server::assistant_message(turn.reply));
    messages.push_back({{"role", "tool"},
                        {"tool_call_id", "call_0"},
                        {"content", "test " + std::to_string(i) + ": 3 passed, 1 failed"}});
    const std::vector<int32_t> next = prompt_ids(messages);
    auto history =
        std::find_if(histories.begin(), histories.end(),
                     [&](const std::vector<int32_t>& h) { return begins_with(next, h); });
    ASSERT_NE(history, histories.end()) << "turn " << i;
    // The client answers at once: its request waits before the pre-fill's first step.
    warm.idle(/*preempt_after=*/0, next);
    turn = warm.chat(messages, {}, 24);
    EXPECT_EQ(turn.stats.cache.tier, "session") << "turn " << i;
    EXPECT_EQ(turn.stats.cached_tokens, int64_t(history->size())) << "turn " << i;
    EXPECT_EQ(turn.generated, cold.chat(messages, {}, 24).generated) << "turn " << i;
    prefilled += turn.stats.prefill_tokens;
    added += int64_t(next.size() - history->size());
  }
  EXPECT_LE(double(prefilled), 1.05 * double(added)) << prefilled << " of " << added;
}

TEST_F(LiveSessionTest, ARequestThatDoesNotNeedThePrefillPreemptsItAndStaysExact) {
  TurnHarness warm(runtime_, config_);
  TurnHarness cold(runtime_, std::nullopt);
  ordered_json messages = ordered_json::array(
      {{{"role", "user"}, {"content", "Explain the build system in one paragraph."}}});
  TurnResult first = warm.chat(messages, {}, 24);
  const ordered_json other = ordered_json::array(
      {{{"role", "user"}, {"content", "Something else entirely: list three prime numbers."}}});
  // Another conversation waits: the pre-fill gives way after one step, keeping what it did.
  warm.idle(/*preempt_after=*/1, prompt_ids(other));
  EXPECT_EQ(warm.chat(other, {}, 12).generated, cold.chat(other, {}, 12).generated);
  messages.push_back(server::assistant_message(first.reply));
  messages.push_back({{"role", "user"}, {"content", "Shorter, please."}});
  TurnResult next = warm.chat(messages, {}, 12);
  EXPECT_TRUE(next.stats.cached_tokens > 0);
  EXPECT_EQ(next.generated, cold.chat(messages, {}, 12).generated);
}

TEST_F(LiveSessionTest, APromptExtendingWhatTheSessionHoldsContinuesFromIt) {
  TurnHarness warm(runtime_, config_);
  TurnHarness cold(runtime_, std::nullopt);
  std::vector<int32_t> prompt = runtime_->tokenizer->encode("def main():\n    print(");
  TurnResult first = warm.complete(prompt, 8);
  ASSERT_EQ(first.generated.size(), 8u);
  // The last sampled token is never fed to the session: it holds the prompt and 7 of 8.
  std::vector<int32_t> next = prompt;
  next.insert(next.end(), first.generated.begin(), first.generated.end());
  for (int32_t id : runtime_->tokenizer->encode(")\n\nmain()\n")) next.push_back(id);
  TurnResult second = warm.complete(next, 8);
  EXPECT_EQ(second.stats.cache.tier, "session");
  EXPECT_EQ(second.stats.cache.kind, "live");
  EXPECT_EQ(second.stats.cached_tokens, int64_t(prompt.size() + 7));
  EXPECT_EQ(second.generated, cold.complete(next, 8).generated);
}

// Qwen Code's first user message: reminder blocks as content parts (joined with "\n"), the
// date block last; its replay next turn leaves the date block out of that message.
std::string reminder(const std::string& body) {
  return "<system-reminder>\n" + body + "\n</system-reminder>";
}

TEST_F(LiveSessionTest, ADroppedReminderBlockResumesFromTheEditPointBeforeIt) {
  TurnHarness warm(runtime_, config_);
  TurnHarness cold(runtime_, std::nullopt);
  const std::string skills = reminder(
      "The following skills are available: refactor, test, review, explain, document. Use the "
      "Skill tool to load one when the task matches its description, and never guess.");
  const std::string setup = reminder(
      "This is the agent. We are setting up the context for our chat. The project is a C++ "
      "inference server with a prefix cache; the build uses CMake and Ninja.");
  const std::string date = reminder(
      "The current date is: Tuesday, December 1, 2026. Note: this is not the user's "
      "request; it is context the agent adds to every first message.");
  ordered_json turn1 = ordered_json::array(
      {{{"role", "system"}, {"content", "You are a coding agent."}},
       {{"role", "user"}, {"content", skills + "\n" + setup + "\n" + date + "\nSay hello"}}});
  server::RenderedPrompt rendered =
      runtime_->render_chat(turn1, ordered_json::array(), true, ordered_json::object());
  ASSERT_FALSE(rendered.edit_points.empty());
  const int64_t date_start = rendered.edit_points.back();
  EXPECT_TRUE(runtime_->tokenizer
                  ->decode(std::span<const int32_t>(rendered.ids).subspan(size_t(date_start)))
                  .starts_with("<system-reminder>\nThe current date"));
  TurnResult first = warm.chat(turn1, {}, 16);

  ordered_json turn2 =
      ordered_json::array({{{"role", "system"}, {"content", "You are a coding agent."}},
                           {{"role", "user"}, {"content", skills + "\n" + setup + "\nSay hello"}},
                           server::assistant_message(first.reply),
                           {{"role", "user"}, {"content", date + "\nNow say bye"}}});
  TurnResult second = warm.chat(turn2, {}, 16);
  EXPECT_EQ(second.stats.cache.kind, "edit_point");
  EXPECT_EQ(second.stats.cached_tokens, date_start);
  EXPECT_EQ(second.generated, cold.chat(turn2, {}, 16).generated);
}

}  // namespace
}  // namespace qmlx::testing
