// The Responses event stream: the exact event order and fields Codex and the OpenAI SDK parse,
// usage with cached and reasoning tokens, incomplete and failed endings, and the
// non-streamed object carrying the same items.
#include <gtest/gtest.h>

#include "server/common/reasoning_signature.h"
#include "server/responses/responses_format.h"
#include "tests/server/fake_runtime.h"
#include "tests/server/sse_reader.h"

namespace qmlx::server {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

std::shared_ptr<const ResponsesRequest> request_with_tools() {
  auto r = parse_responses_request(ojson::parse(R"({"input": "x", "store": false, "tools": [
      {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
      {"type": "namespace", "name": "ns", "tools": [{"type": "function", "name": "g"}]},
      {"type": "custom", "name": "apply_patch"}]})"),
                                   SamplingDefaults(), ResponseStore());
  return r.responses;
}

struct Events {
  std::vector<std::string> types;
  std::vector<json> data;
};

Events events_of(const std::string& sse) {
  Events out;
  int64_t expected_sequence = 0;
  for (const auto& e : testing::parse_sse(sse)) {
    json data = json::parse(e.data);
    EXPECT_EQ(data["type"], e.event);  // the SSE event name repeats the payload's type
    EXPECT_EQ(data["sequence_number"], expected_sequence++);
    out.types.push_back(e.event);
    out.data.push_back(std::move(data));
  }
  return out;
}

GenerationEvent done_event(FinishReason finish) {
  GenerationEvent done;
  done.kind = GenerationEvent::Kind::kDone;
  done.finish = finish;
  done.stats.prompt_tokens = 100;
  done.stats.cached_tokens = 80;
  done.stats.completion_tokens = 30;
  return done;
}

class ResponsesFormatTest : public ::testing::Test {
 protected:
  std::shared_ptr<ModelRuntime> runtime_ = testing::make_fake_runtime({});
  const Tokenizer& tokenizer_ = *runtime_->tokenizer;
  ResponseMeta meta_{"resp_qmlx7", "fixture", 1700000000};
};

TEST_F(ResponsesFormatTest, StreamHasTheExactEventSequence) {
  ResponsesEventStream stream(meta_, request_with_tools(), tokenizer_);
  std::string sse = stream.start();
  sse += stream.keepalive();
  sse += stream.delta({"think", "", {}});
  sse += stream.delta({" more", "Hel", {}});
  sse += stream.delta({"", "lo", {}});
  sse += stream.delta({"", "", {{0, "call_a", "exec_command", "{\"cmd\":"}}});
  sse += stream.delta({"", "", {{0, "", "", "\"ls\"}"}}});
  sse += stream.delta({"", "", {{1, "call_b", "ns.g", "{}"}}});
  sse += stream.delta({"", "", {{2, "call_c", "apply_patch", "{\"input\":\"*** Begin\\n\"}"}}});
  sse += stream.finish(done_event(FinishReason::kToolCalls));
  Events e = events_of(sse);
  std::vector<std::string> want = {
      "response.created", "response.in_progress", "keepalive",
      // reasoning
      "response.output_item.added", "response.content_part.added", "response.reasoning_text.delta",
      "response.reasoning_text.delta", "response.reasoning_text.done", "response.content_part.done",
      "response.output_item.done",
      // message
      "response.output_item.added", "response.content_part.added", "response.output_text.delta",
      "response.output_text.delta", "response.output_text.done", "response.content_part.done",
      "response.output_item.done",
      // function call, in two argument deltas
      "response.output_item.added", "response.function_call_arguments.delta",
      "response.function_call_arguments.delta", "response.function_call_arguments.done",
      "response.output_item.done",
      // namespaced function call
      "response.output_item.added", "response.function_call_arguments.delta",
      "response.function_call_arguments.done", "response.output_item.done",
      // custom tool call
      "response.output_item.added", "response.custom_tool_call_input.delta",
      "response.custom_tool_call_input.done", "response.output_item.done", "response.completed"};
  EXPECT_EQ(e.types, want);

  EXPECT_EQ(e.data[0]["response"]["status"], "in_progress");
  EXPECT_EQ(e.data[0]["response"]["id"], "resp_qmlx7");
  EXPECT_EQ(e.data[0]["response"]["output"], json::array());
  EXPECT_EQ(e.data[3]["item"]["type"], "reasoning");
  EXPECT_EQ(e.data[3]["item"]["summary"], json::array());
  EXPECT_EQ(e.data[3]["item"]["id"], "rs_qmlx7_0");
  EXPECT_EQ(e.data[5]["item_id"], "rs_qmlx7_0");
  EXPECT_EQ(e.data[5]["content_index"], 0);
  EXPECT_EQ(e.data[6]["delta"], " more");
  json reasoning = e.data[9]["item"];
  EXPECT_EQ(reasoning["status"], "completed");
  EXPECT_EQ(reasoning["content"], json::parse(R"([{"type": "reasoning_text",
                                                   "text": "think more"}])"));
  EXPECT_EQ(reasoning_from_signature(reasoning["encrypted_content"].get<std::string>()),
            "think more");

  EXPECT_EQ(e.data[11]["part"]["type"], "output_text");
  EXPECT_EQ(e.data[12]["delta"], "Hel");
  EXPECT_EQ(e.data[12]["output_index"], 1);
  EXPECT_EQ(e.data[14]["text"], "Hello");
  json message = e.data[16]["item"];
  EXPECT_EQ(message["role"], "assistant");
  EXPECT_EQ(message["id"], "msg_qmlx7_1");
  EXPECT_EQ(message["content"][0]["text"], "Hello");

  EXPECT_EQ(e.data[17]["item"]["arguments"], "");
  EXPECT_EQ(e.data[17]["item"]["call_id"], "call_a");
  EXPECT_EQ(e.data[20]["arguments"], "{\"cmd\":\"ls\"}");
  json call = e.data[21]["item"];
  EXPECT_EQ(call, json::parse(R"({"type": "function_call", "call_id": "call_a",
      "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}", "id": "fc_qmlx7_2",
      "status": "completed"})"));
  json namespaced = e.data[25]["item"];
  EXPECT_EQ(namespaced["name"], "g");
  EXPECT_EQ(namespaced["namespace"], "ns");
  json custom = e.data[29]["item"];
  EXPECT_EQ(custom, json::parse(R"({"type": "custom_tool_call", "call_id": "call_c",
      "name": "apply_patch", "input": "*** Begin\n", "id": "ctc_qmlx7_4",
      "status": "completed"})"));
  EXPECT_EQ(e.data[27]["delta"], "*** Begin\n");

  json completed = e.data.back()["response"];
  EXPECT_EQ(completed["status"], "completed");
  EXPECT_EQ(completed["output"].size(), 5u);
  EXPECT_EQ(completed["output"], stream.output());
  EXPECT_EQ(completed["store"], false);
  const json& usage = completed["usage"];
  EXPECT_EQ(usage["input_tokens"], 100);
  EXPECT_EQ(usage["input_tokens_details"]["cached_tokens"], 80);
  EXPECT_EQ(usage["output_tokens"], 30);
  EXPECT_EQ(usage["output_tokens_details"]["reasoning_tokens"], 10);  // bytes of "think more"
  EXPECT_EQ(usage["total_tokens"], 130);
}

TEST_F(ResponsesFormatTest, LengthLimitIsIncompleteAndErrorsFail) {
  ResponsesEventStream cut(meta_, request_with_tools(), tokenizer_);
  std::string sse = cut.start();
  sse += cut.delta({"", "par", {}});
  sse += cut.finish(done_event(FinishReason::kLength));
  Events e = events_of(sse);
  EXPECT_EQ(e.types.back(), "response.incomplete");
  EXPECT_EQ(e.types[e.types.size() - 2], "response.output_item.done");
  EXPECT_EQ(e.data.back()["response"]["status"], "incomplete");
  EXPECT_EQ(e.data.back()["response"]["incomplete_details"]["reason"], "max_output_tokens");

  ResponsesEventStream failed(meta_, request_with_tools(), tokenizer_);
  sse = failed.start();
  sse += failed.fail(503, "shutting down");
  Events f = events_of(sse);
  EXPECT_EQ(f.types.back(), "response.failed");
  const json& response = f.data.back()["response"];
  EXPECT_EQ(response["status"], "failed");
  EXPECT_EQ(response["error"]["message"], "shutting down");
  EXPECT_TRUE(response["error"]["code"].is_string());
}

TEST_F(ResponsesFormatTest, WholeResponseHasTheStreamsItems) {
  ParsedOutput output;
  output.reasoning = "why";
  output.content = "text";
  output.tool_calls = {{"call_1", "apply_patch", "{\"input\":\"p\"}"}};
  json r = responses_object(meta_, request_with_tools(), tokenizer_, output,
                            done_event(FinishReason::kToolCalls));
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["status"], "completed");
  EXPECT_EQ(r["model"], "fixture");
  EXPECT_EQ(r["created_at"], 1700000000);
  ASSERT_EQ(r["output"].size(), 3u);
  EXPECT_EQ(r["output"][0]["type"], "reasoning");
  EXPECT_EQ(r["output"][1]["content"][0]["text"], "text");
  EXPECT_EQ(r["output"][2]["type"], "custom_tool_call");
  EXPECT_EQ(r["output"][2]["input"], "p");
  EXPECT_EQ(r["usage"]["input_tokens_details"]["cached_tokens"], 80);
  EXPECT_EQ(r["tools"].size(), 3u);  // echoed as the client sent them
}

TEST(ReasoningSignatureTest, RoundTripsAnyBytesAndRefusesForeignText) {
  for (std::string text : {std::string(""), std::string("a"), std::string("ab"), std::string("abc"),
                           std::string("déjà \xe2\x82"), std::string("\0\xff\n", 3)}) {
    std::string sealed = reasoning_signature(text);
    EXPECT_EQ(sealed.rfind("qmlx-reasoning-v1:", 0), 0u);
    EXPECT_EQ(reasoning_from_signature(sealed), text);
  }
  EXPECT_EQ(reasoning_from_signature("gAAAAABn-openai-encrypted"), std::nullopt);
  EXPECT_EQ(reasoning_from_signature("qmlx-reasoning-v1:abc"),
            std::nullopt);  // not a multiple of 4
  EXPECT_EQ(reasoning_from_signature("qmlx-reasoning-v1:a=bc"), std::nullopt);  // padding inside
  EXPECT_EQ(reasoning_from_signature("qmlx-reasoning-v1:ab!c"), std::nullopt);  // not base64
}

TEST(ResponseStoreTest, KeepsTheNewestAndEvictsTheOldestFirst) {
  ResponseStore store(2);
  auto conversation = ojson::parse(R"([{"role": "user", "content": "q"}])");
  store.put("a", conversation, json::parse(R"([{"type": "message"}])"));
  store.put("b", conversation, json::array());
  ASSERT_TRUE(store.get("a"));
  EXPECT_EQ(*store.get("a"),
            ojson::parse(R"([{"role": "user", "content": "q"}, {"type": "message"}])"));
  store.put("c", conversation, json::array());
  EXPECT_EQ(store.size(), 2u);
  EXPECT_FALSE(store.get("a"));  // the oldest went first
  EXPECT_TRUE(store.get("b"));
  EXPECT_TRUE(store.get("c"));
  EXPECT_FALSE(store.get("never"));
  store.put("b", ojson::array(), json::array());  // replacing keeps one entry per id
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(*store.get("b"), ojson::array());
}

}  // namespace
}  // namespace qmlx::server
