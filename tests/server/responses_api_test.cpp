// POST /v1/responses through the real server in process (routes, scheduler, output parser, SSE)
// over the fake model: the whole object, the stream, previous_response_id, keep-alives while
// the prompt is prefilled, and errors in the OpenAI shape.
#include <gtest/gtest.h>
#include <httplib.h>

#include "server/routes/api_server.h"
#include "tests/server/fake_runtime.h"
#include "tests/server/sse_reader.h"

namespace qmlx::server {
namespace {

using json = nlohmann::json;
using testing::FakeModelOptions;
using testing::parse_sse;

const char kToolScript[] =
    "<think>check the weather</think>Let me look.<tool_call>\n"
    "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

class ResponsesApiTest : public ::testing::Test {
 protected:
  void start(FakeModelOptions model, ApiServerSettings settings = {}) {
    ServerOptions options;
    options.port = 0;
    options.metrics_port = -1;
    server_ = std::make_unique<ApiServer>(options, registry_, settings);
    server_->start();
    server_->set_ready(testing::make_fake_runtime(model), hooks_);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(30, 0);
  }
  void TearDown() override {
    if (server_) server_->stop(std::chrono::milliseconds(2000));
  }
  httplib::Result post(const json& body) {
    return client_->Post("/v1/responses", {{"Authorization", "Bearer test"}}, body.dump(),
                         "application/json");
  }
  static json request(json input, json extra = json::object()) {
    json body = {
        {"model", "fake-model"},
        {"input", std::move(input)},
        {"temperature", 0},
        {"tools",
         {{{"type", "function"},
           {"name", "get_weather"},
           {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}},
          {{"type", "web_search"}}}}};
    body.update(extra);
    return body;
  }

  MetricsRegistry registry_;
  testing::RecordingHooks hooks_;
  std::unique_ptr<ApiServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ResponsesApiTest, WholeResponseHasReasoningMessageAndCall) {
  start({.script = kToolScript});
  auto res = post(request("weather?"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  json r = json::parse(res->body);
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["status"], "completed");
  EXPECT_EQ(r["model"], "fake-model");
  EXPECT_EQ(r["id"].get<std::string>().rfind("resp_", 0), 0u);
  ASSERT_EQ(r["output"].size(), 3u) << r.dump(2);
  EXPECT_EQ(r["output"][0]["content"][0]["text"], "check the weather");
  EXPECT_EQ(r["output"][1]["content"][0]["text"], "Let me look.");
  EXPECT_EQ(r["output"][2]["type"], "function_call");
  EXPECT_EQ(r["output"][2]["name"], "get_weather");
  EXPECT_EQ(json::parse(r["output"][2]["arguments"].get<std::string>()), (json{{"city", "Paris"}}));
  EXPECT_GT(r["usage"]["input_tokens"], 0);
  EXPECT_EQ(r["usage"]["input_tokens_details"]["cached_tokens"], 0);
  EXPECT_GT(r["usage"]["output_tokens_details"]["reasoning_tokens"], 0);
}

TEST_F(ResponsesApiTest, StreamEndsCompletedWithTheSameOutput) {
  start({.script = kToolScript});
  auto res = post(request("weather?", {{"stream", true}}));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
  std::vector<std::string> types;
  std::string text;
  json completed;
  for (const auto& e : parse_sse(res->body)) {
    json data = json::parse(e.data);
    types.push_back(data["type"]);
    if (data["type"] == "response.output_text.delta") text += data["delta"].get<std::string>();
    if (data["type"] == "response.completed") completed = data["response"];
  }
  ASSERT_GE(types.size(), 3u);
  EXPECT_EQ(types[0], "response.created");
  EXPECT_EQ(types[1], "response.in_progress");
  EXPECT_EQ(types.back(), "response.completed");
  EXPECT_EQ(text, "Let me look.");
  ASSERT_EQ(completed["output"].size(), 3u);
  EXPECT_EQ(completed["output"][2]["call_id"].get<std::string>().rfind("call_", 0), 0u);
}

TEST_F(ResponsesApiTest, PreviousResponseIdContinuesAndUnknownIdsAre404) {
  start({.script = "Fine."});
  json first = json::parse(post(request("one"))->body);
  auto second = post(request("two", {{"previous_response_id", first["id"]}}));
  ASSERT_EQ(second->status, 200) << second->body;
  json r = json::parse(second->body);
  EXPECT_EQ(r["previous_response_id"], first["id"]);
  // The second prompt holds the first exchange, so it is longer than the first prompt.
  EXPECT_GT(r["usage"]["input_tokens"], first["usage"]["input_tokens"]);

  json unstored = json::parse(post(request("three", {{"store", false}}))->body);
  auto missing = post(request("x", {{"previous_response_id", unstored["id"]}}));
  EXPECT_EQ(missing->status, 404);
  json error = json::parse(missing->body)["error"];
  EXPECT_EQ(error["param"], "previous_response_id");
  EXPECT_NE(error["message"].get<std::string>().find(unstored["id"].get<std::string>()),
            std::string::npos);

  auto bad = post(json{{"input", json::array({{{"role", "user"}, {"content", 5}}})}});
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(json::parse(bad->body)["error"]["param"], "input[0].content");
}

TEST_F(ResponsesApiTest, KeepaliveEventsWhileThePromptIsPrefilled) {
  ApiServerSettings settings;
  settings.keepalive_seconds = 0.05;
  settings.runner.prefill_chunk_tokens = 16;
  start({.script = "ok", .prefill_delay_ms_per_token = 5}, settings);
  auto res = post(request("a prompt long enough to take a while", {{"stream", true}}));
  ASSERT_TRUE(res);
  int keepalives = 0;
  for (const auto& e : parse_sse(res->body)) {
    EXPECT_TRUE(e.comment.empty());  // Codex's parser never sees comments: events only
    keepalives += e.event == "keepalive";
  }
  EXPECT_GT(keepalives, 0);
}

}  // namespace
}  // namespace qmlx::server
