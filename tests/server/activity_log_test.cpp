// ActivityLog and RequestOrigin: how requests become conversation turns for the status page,
// what is kept (bounded), and that prompt text leaves the server only when asked for.
#include "server/activity/activity_log.h"

#include <gtest/gtest.h>

#include <map>

namespace qmlx::server {
namespace {

using json = nlohmann::json;

HeaderLookup headers(std::map<std::string, std::string> values) {
  return [values](const char* name) {
    for (const auto& [k, v] : values) {
      if (strcasecmp(k.c_str(), name) == 0) return v;
    }
    return std::string();
  };
}

GenerationRequest chat(const std::string& first_user, int turns = 1) {
  GenerationRequest r;
  r.route = Route::kChatCompletions;
  r.messages.push_back({{"role", "system"}, {"content", "You are an agent."}});
  r.messages.push_back({{"role", "user"}, {"content", first_user}});
  for (int i = 1; i < turns; ++i) {
    r.messages.push_back({{"role", "assistant"}, {"content", "ok"}});
    r.messages.push_back({{"role", "user"}, {"content", "more " + std::to_string(i)}});
  }
  return r;
}

GenerationStats stats(int64_t cached, int64_t prefill) {
  GenerationStats s;
  s.prompt_tokens = cached + prefill;
  s.cached_tokens = cached;
  s.prefill_tokens = prefill;
  s.completion_tokens = 4;
  if (cached > 0) {
    s.cache.tier = "ram";
    s.cache.kind = "prompt_end";
    s.cache.restore_bytes = 1 << 20;
    s.cache.read_ms = 2;
  } else {
    s.cache.miss_reason = "no_candidate";
  }
  return s;
}

TEST(RequestOriginTest, SessionHeadersNameTheConversation) {
  for (const char* name : kSessionHeaders) {
    RequestOrigin o = request_origin(headers({{name, "abc-123"}, {"User-Agent", "agent/1"}}),
                                     chat("task"));
    EXPECT_EQ(o.session, "abc-123") << name;
    EXPECT_EQ(o.conversation, "abc-123") << name;
    EXPECT_EQ(o.client, "agent/1");
  }
}

TEST(RequestOriginTest, WithoutASessionTurnsJoinAndSubAgentsStayApart) {
  auto ua = headers({{"User-Agent", "agent/1"}});
  const RequestOrigin turn1 = request_origin(ua, chat("fix the build"));
  const RequestOrigin turn3 = request_origin(ua, chat("fix the build", 3));
  const RequestOrigin sub_agent = request_origin(ua, chat("search the code for TODOs"));
  const RequestOrigin other_client = request_origin(headers({{"User-Agent", "other/2"}}),
                                                    chat("fix the build"));
  EXPECT_EQ(turn1.conversation.rfind("auto-", 0), 0u);
  EXPECT_EQ(turn1.conversation, turn3.conversation);
  EXPECT_NE(turn1.conversation, sub_agent.conversation);
  EXPECT_NE(turn1.conversation, other_client.conversation);
  EXPECT_TRUE(turn1.session.empty());
}

TEST(RequestOriginTest, ClientValuesAreBounded) {
  RequestOrigin o = request_origin(
      headers({{"User-Agent", std::string(5000, 'u')}, {"session-id", std::string(900, 's')}}),
      chat("x"));
  EXPECT_LE(o.client.size(), 200u);
  EXPECT_LE(o.session.size(), 128u);
}

TEST(ActivityLogTest, TurnsAreNumberedPerConversationWithOutcomeAndCause) {
  ActivityLog log;
  RequestOrigin a{"agent/1", "s-a", "s-a"}, b{"agent/1", "s-b", "s-b"};
  log.record_generation(1, Route::kChatCompletions, a, 200, FinishReason::kStop, stats(0, 100));
  log.record_generation(2, Route::kMessages, b, 200, FinishReason::kStop, stats(0, 50));
  log.record_generation(3, Route::kChatCompletions, a, 200, FinishReason::kStop, stats(100, 20));
  GenerationStats diverged = stats(0, 130);
  DivergenceReport d;
  d.position = 12;
  d.cause = "date";
  d.fix = "leave the date out";
  d.before = "Today is ";
  d.cached = "2026-12-06";
  d.incoming = "2026-12-07";
  diverged.cache.divergence_report = d;
  log.record_generation(4, Route::kChatCompletions, a, 499, FinishReason::kCancelled, diverged);
  log.record_rejected(5, "/v1/chat/completions", a, 400, "messages must be an array");

  const json all = log.to_json(0, /*show_text=*/false);
  EXPECT_EQ(all["seq"], 5);
  ASSERT_EQ(all["requests"].size(), 5u);
  EXPECT_EQ(all["requests"][4]["status"], 400);
  EXPECT_FALSE(all["requests"][4]["ran"]);
  EXPECT_EQ(all["requests"][4]["error"], "messages must be an array");
  ASSERT_EQ(all["conversations"].size(), 2u);
  json conversation_a;
  for (const json& c : all["conversations"]) {
    if (c["key"] == "s-a") conversation_a = c;
  }
  ASSERT_EQ(conversation_a["turns"].size(), 3u);  // the rejected request is not a turn
  const json& turns = conversation_a["turns"];
  EXPECT_EQ(turns[0]["turn"], 1);
  EXPECT_EQ(turns[0]["outcome"], "miss");
  EXPECT_EQ(turns[0]["cause"], "none");
  EXPECT_EQ(turns[1]["turn"], 2);
  EXPECT_EQ(turns[1]["outcome"], "hit");
  EXPECT_EQ(turns[1]["tier"], "ram");
  EXPECT_EQ(turns[2]["turn"], 3);
  EXPECT_EQ(turns[2]["outcome"], "miss");
  EXPECT_EQ(turns[2]["cause"], "date");
  EXPECT_EQ(turns[2]["status"], 499);
  EXPECT_EQ(turns[2]["finish"], "cancelled");
  EXPECT_EQ(turns[2]["divergence"]["position"], 12);
  EXPECT_EQ(turns[2]["divergence"]["fix"], "leave the date out");
  // Without --ui-show-text the prompt's text never leaves the server.
  EXPECT_FALSE(turns[2]["divergence"].contains("before"));
  EXPECT_FALSE(turns[2]["divergence"].contains("incoming"));
  EXPECT_EQ(all.dump().find("2026-12-0"), std::string::npos);

  const json shown = log.to_json(0, /*show_text=*/true);
  bool found = false;
  for (const json& c : shown["conversations"]) {
    if (c["key"] != "s-a") continue;
    EXPECT_EQ(c["turns"][2]["divergence"]["incoming"], "2026-12-07");
    EXPECT_EQ(c["turns"][2]["divergence"]["cached"], "2026-12-06");
    found = true;
  }
  EXPECT_TRUE(found);
  // The RAM tier's restore bandwidth: 1 MiB in 2 ms.
  EXPECT_NEAR(all["restore"]["ram"]["bytes_per_second"].get<double>(), 524288000.0, 1.0);
}

TEST(ActivityLogTest, SinceSendsOnlyWhatIsNew) {
  ActivityLog log;
  RequestOrigin a{"agent/1", "s-a", "s-a"}, b{"agent/1", "s-b", "s-b"};
  log.record_generation(1, Route::kChatCompletions, a, 200, FinishReason::kStop, stats(0, 10));
  log.record_generation(2, Route::kChatCompletions, b, 200, FinishReason::kStop, stats(0, 10));
  const uint64_t seen = log.last_seq();
  EXPECT_EQ(log.to_json(seen, false)["requests"].size(), 0u);
  EXPECT_EQ(log.to_json(seen, false)["conversations"].size(), 0u);
  log.record_generation(3, Route::kChatCompletions, a, 200, FinishReason::kStop, stats(10, 2));
  const json fresh = log.to_json(seen, false);
  ASSERT_EQ(fresh["requests"].size(), 1u);
  EXPECT_EQ(fresh["requests"][0]["uid"], 3);
  // A changed conversation comes whole; an unchanged one not at all.
  ASSERT_EQ(fresh["conversations"].size(), 1u);
  EXPECT_EQ(fresh["conversations"][0]["key"], "s-a");
  EXPECT_EQ(fresh["conversations"][0]["turns"].size(), 2u);
}

TEST(ActivityLogTest, BoundedInRequestsConversationsAndTurns) {
  ActivityLimits limits;
  limits.requests = 10;
  limits.conversations = 3;
  limits.turns_per_conversation = 4;
  ActivityLog log(limits);
  auto run = [&log](int uid, const std::string& key) {
    log.record_generation(uint64_t(uid), Route::kChatCompletions, {"c", key, key}, 200,
                          FinishReason::kStop, stats(0, 1));
  };
  for (int i = 0; i < 30; ++i) run(i, "s" + std::to_string(i % 3));
  run(30, "s3");  // a fourth conversation: the least recently active (s0) goes
  const json all = log.to_json(0, false);
  EXPECT_EQ(all["requests"].size(), 10u);
  EXPECT_EQ(all["requests"][9]["uid"], 30);
  ASSERT_EQ(all["conversations"].size(), 3u);
  for (const json& c : all["conversations"]) {
    EXPECT_NE(c["key"], "s0");
    if (c["key"] == "s3") {
      EXPECT_EQ(c["turns_seen"], 1);
      continue;
    }
    EXPECT_EQ(c["turns"].size(), 4u);
    EXPECT_EQ(c["turns_seen"], 10);
    EXPECT_EQ(c["turns"][3]["turn"], 10);  // numbers keep counting past dropped turns
    EXPECT_EQ(c["turns"][0]["turn"], 7);
  }
}

}  // namespace
}  // namespace qmlx::server
