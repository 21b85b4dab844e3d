#include <gtest/gtest.h>

#include "server/anthropic/anthropic_format.h"
#include "server/common/reasoning_signature.h"
#include "tests/server/sse_reader.h"

namespace qmlx::server {
namespace {

using json = nlohmann::json;
using testing::parse_sse;

GenerationEvent done_event(FinishReason reason, int64_t prompt, int64_t cached, int64_t out) {
  GenerationEvent done;
  done.kind = GenerationEvent::Kind::kDone;
  done.finish = reason;
  done.stats.prompt_tokens = prompt;
  done.stats.cached_tokens = cached;
  done.stats.prefill_tokens = prompt - cached;
  done.stats.completion_tokens = out;
  return done;
}

TEST(AnthropicFormatTest, EventSequenceForThinkingTextAndToolUse) {
  AnthropicEventStream stream({"msg_1", "m", 0});
  std::string sse = stream.start(10);
  sse += stream.ping();
  OutputDelta a;
  a.reasoning = "let me ";
  sse += stream.delta(a);
  OutputDelta b;
  b.reasoning = "think";
  b.content = "Sure.";
  sse += stream.delta(b);
  OutputDelta c;
  c.tool_calls = {{0, "call_1", "get", "{\"city\":\"Paris\"}"}, {1, "call_2", "put", "{}"}};
  sse += stream.delta(c);
  sse += stream.finish(done_event(FinishReason::kToolCalls, 10, 4, 9));

  auto events = parse_sse(sse);
  std::vector<std::string> names;
  for (const auto& e : events) names.push_back(e.event);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "message_start", "ping", "content_block_start", "content_block_delta",
                       "content_block_delta", "content_block_delta", "content_block_stop",
                       "content_block_start", "content_block_delta", "content_block_stop",
                       "content_block_start", "content_block_delta", "content_block_stop",
                       "content_block_start", "content_block_delta", "content_block_stop",
                       "message_delta", "message_stop"}));
  // Every event's data carries its own type, and block indexes count up from 0.
  int expected_index = -1;
  for (const auto& e : events) {
    json data = json::parse(e.data);
    EXPECT_EQ(data["type"], e.event);
    if (e.event == "content_block_start") {
      EXPECT_EQ(data["index"], ++expected_index);
    }
    if (e.event == "content_block_delta" || e.event == "content_block_stop") {
      EXPECT_EQ(data["index"], expected_index);
    }
  }
  EXPECT_EQ(json::parse(events[2].data)["content_block"]["type"], "thinking");
  EXPECT_EQ(json::parse(events[3].data)["delta"]["type"], "thinking_delta");
  EXPECT_EQ(json::parse(events[5].data)["delta"]["type"], "signature_delta");
  EXPECT_EQ(json::parse(events[8].data)["delta"],
            (json{{"type", "text_delta"}, {"text", "Sure."}}));
  json tool_start = json::parse(events[10].data)["content_block"];
  EXPECT_EQ(tool_start["type"], "tool_use");
  EXPECT_EQ(tool_start["id"], "call_1");
  EXPECT_EQ(tool_start["name"], "get");
  EXPECT_EQ(json::parse(events[11].data)["delta"],
            (json{{"type", "input_json_delta"}, {"partial_json", "{\"city\":\"Paris\"}"}}));
  json message_delta = json::parse(events[16].data);
  EXPECT_EQ(message_delta["delta"]["stop_reason"], "tool_use");
  EXPECT_EQ(message_delta["usage"]["output_tokens"], 9);
  EXPECT_EQ(message_delta["usage"]["input_tokens"], 6);
  EXPECT_EQ(message_delta["usage"]["cache_read_input_tokens"], 4);
}

TEST(AnthropicFormatTest, TextOnlyStreamHasOneBlock) {
  AnthropicEventStream stream({"msg_2", "m", 0});
  OutputDelta d;
  d.content = "hi";
  std::string sse = stream.start(3) + stream.delta(d) + stream.delta(d);
  GenerationEvent done = done_event(FinishReason::kStopSequence, 3, 0, 2);
  done.stop_sequence = "STOP";
  sse += stream.finish(done);
  auto events = parse_sse(sse);
  ASSERT_EQ(events.size(), 7u);
  json delta = json::parse(events[5].data)["delta"];
  EXPECT_EQ(delta["stop_reason"], "stop_sequence");
  EXPECT_EQ(delta["stop_sequence"], "STOP");
}

TEST(AnthropicFormatTest, WholeMessageUsageSumsToThePrompt) {
  ParsedOutput output;
  output.reasoning = "r";
  output.content = "c";
  output.tool_calls = {{"call_1", "get", "{\"a\":1}"}};
  json m =
      anthropic_message({"msg_3", "m", 0}, output, done_event(FinishReason::kToolCalls, 20, 5, 7));
  EXPECT_EQ(m["type"], "message");
  EXPECT_EQ(m["content"][0]["type"], "thinking");
  EXPECT_EQ(m["content"][1]["text"], "c");
  EXPECT_EQ(m["content"][2]["input"]["a"], 1);
  EXPECT_EQ(m["stop_reason"], "tool_use");
  EXPECT_EQ(
      m["usage"]["input_tokens"].get<int>() + m["usage"]["cache_read_input_tokens"].get<int>(), 20);
  EXPECT_EQ(m["usage"]["cache_creation_input_tokens"], 0);
  EXPECT_EQ(m["timings"]["cached"].get<int>() + m["timings"]["prefill"].get<int>(), 20);
}

// A thinking block ends with a signature that carries its reasoning; with display "omitted"
// the text is not sent, but the signature still is (and decodes to the whole reasoning).
TEST(AnthropicFormatTest, ThinkingSignatureCarriesTheReasoning) {
  for (bool hide : {false, true}) {
    ResponseMeta meta{"msg_1", "m", 0, hide};
    AnthropicEventStream stream(meta);
    std::string sse = stream.start(10);
    OutputDelta a;
    a.reasoning = "step one, ";
    sse += stream.delta(a);
    OutputDelta b;
    b.reasoning = "step two";
    b.content = "Done.";
    sse += stream.delta(b);
    sse += stream.finish(done_event(FinishReason::kStop, 10, 0, 5));
    std::string shown, signature;
    for (const auto& e : parse_sse(sse)) {
      json data = json::parse(e.data);
      if (e.event != "content_block_delta") continue;
      if (data["delta"]["type"] == "thinking_delta") shown += data["delta"]["thinking"];
      if (data["delta"]["type"] == "signature_delta") signature = data["delta"]["signature"];
    }
    EXPECT_EQ(shown, hide ? "" : "step one, step two");
    EXPECT_EQ(reasoning_from_signature(signature), "step one, step two");

    ParsedOutput output;
    output.reasoning = "why";
    output.content = "Done.";
    json message = anthropic_message(meta, output, done_event(FinishReason::kStop, 10, 0, 5));
    EXPECT_EQ(message["content"][0]["thinking"], hide ? "" : "why");
    EXPECT_EQ(reasoning_from_signature(message["content"][0]["signature"]), "why");
  }
}

}  // namespace
}  // namespace qmlx::server
