// The idle pre-fill of the next turn's history (server/canonical_history), on the real request
// path: whichever role the client's next message has, a user message or a tool result, the
// next turn restores the reply as the template re-renders it and prefills only the new message.
#include <gtest/gtest.h>

#include "server/scheduling/canonical_history.h"
#include "tests/integration/turn_harness.h"

namespace qmlx::testing {
namespace {

using ordered_json = nlohmann::ordered_json;

class CanonicalHistoryTest : public TinyModelCacheTest {
 protected:
  CanonicalHistoryTest() : TinyModelCacheTest("qmlx-canonical", 33) {}
};

TEST_F(CanonicalHistoryTest, NextTurnHitsWhicheverRoleFollowsTheReply) {
  TurnHarness warm(runtime_, config_);
  TurnHarness cold(runtime_, std::nullopt);
  ordered_json messages = ordered_json::array(
      {{{"role", "system"}, {"content", "You are a coding agent."}},
       {{"role", "user"}, {"content", "Run the tests and tell me what fails."}}});
  TurnResult first = warm.chat(messages, {}, 24);
  // A random model thinks and never calls a tool: the reply is reasoning the template keeps
  // before a tool result and strips before a user message, so the two histories differ.
  ASSERT_FALSE(first.reply.reasoning.empty());
  ASSERT_TRUE(first.reply.tool_calls.empty());
  auto histories = server::render_canonical_histories(*runtime_, messages, ordered_json::array(),
                                                      ordered_json::object(), first.reply);
  ASSERT_EQ(histories.size(), 2u);
  EXPECT_LT(histories[0].size(), histories[1].size()) << "user first, reasoning stripped";
  warm.idle();

  const ordered_json next_messages[] = {
      {{"role", "user"}, {"content", "Thanks. Now fix it."}},
      {{"role", "tool"}, {"tool_call_id", "call_0"}, {"content", "3 passed, 1 failed"}}};
  for (size_t i = 0; i < 2; ++i) {
    ordered_json conversation = messages;
    conversation.push_back(server::assistant_message(first.reply));
    conversation.push_back(next_messages[i]);
    TurnResult next = warm.chat(conversation, {}, 4);
    EXPECT_EQ(next.stats.cache.kind, "canonical_history") << next_messages[i]["role"];
    EXPECT_EQ(next.stats.cached_tokens, int64_t(histories[i].size())) << next_messages[i]["role"];
    EXPECT_EQ(next.generated, cold.chat(conversation, {}, 4).generated);
  }
}

}  // namespace
}  // namespace qmlx::testing
