// The HTTP server end to end in process: real routes, real SSE, the real scheduler and output
// parser, over a fake model whose greedy reply is a fixed script.
#include <gtest/gtest.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "base/json_depth.h"
#include "server/routes/api_server.h"
#include "tests/server/fake_runtime.h"
#include "tests/server/sse_reader.h"

namespace qmlx::server {
namespace {

using json = nlohmann::json;
using testing::FakeModelOptions;
using testing::parse_sse;
using testing::RecordingHooks;

const char kToolScript[] =
    "<think>check the weather</think>Let me look.<tool_call>\n"
    "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

const char kWeatherTool[] = R"([{"type": "function", "function": {"name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])";

// Sends `request` on a fresh connection and returns what comes back until the server closes it
// or a second passes.
std::string raw_request(int port, const std::string& request) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return "";
  }
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  timeval timeout{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string response;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) {
    response.append(buf, static_cast<size_t>(n));
    if (response.find("}") != std::string::npos) break;
  }
  close(fd);
  return response;
}

// What came back on a raw connection, and whether the server ended it (end of stream) rather
// than the read timing out.
struct RawReply {
  std::string text;
  bool closed_by_server = false;
};

// Sends `head`, then `body_bytes` bytes of body from a second thread (as a client that keeps
// uploading while the answer arrives), and reads until the server closes or 10 s pass.
RawReply upload_and_read(int port, const std::string& head, size_t body_bytes) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  RawReply reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return reply;
  }
  send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  std::thread uploader([fd, body_bytes] {
    std::string chunk(64 * 1024, 'x');
    for (size_t sent = 0; sent < body_bytes;) {
      ssize_t n = send(fd, chunk.data(), std::min(chunk.size(), body_bytes - sent), MSG_NOSIGNAL);
      if (n <= 0) return;  // the server has closed
      sent += size_t(n);
    }
  });
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) reply.text.append(buf, size_t(n));
  reply.closed_by_server = n == 0 || (n < 0 && errno == ECONNRESET);
  shutdown(fd, SHUT_RDWR);
  uploader.join();
  close(fd);
  return reply;
}

class ApiServerTest : public ::testing::Test {
 protected:
  void start(FakeModelOptions model = {}, ServerOptions options = {},
             ApiServerSettings settings = {}, bool ready = true) {
    options.port = 0;
    options.metrics_port = -1;  // any free port
    server_ = std::make_unique<ApiServer>(options, registry_, settings);
    server_->start();
    runtime_ = testing::make_fake_runtime(model);
    if (ready) server_->set_ready(runtime_, hooks_);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(30, 0);
  }
  void TearDown() override {
    if (server_) server_->stop(std::chrono::milliseconds(2000));
  }

  httplib::Result post(const std::string& path, const std::string& body,
                       httplib::Headers headers = {{"Authorization", "Bearer test"}}) {
    return client_->Post(path.c_str(), headers, body, "application/json");
  }
  json post_json(const std::string& path, const json& body) {
    auto res = post(path, body.dump());
    EXPECT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
    return json::parse(res->body);
  }
  static json chat(const std::string& text, json extra = json::object()) {
    json body = {{"model", "fake-model"},
                 {"messages", {{{"role", "user"}, {"content", text}}}},
                 {"temperature", 0}};
    body.update(extra);
    return body;
  }

  MetricsRegistry registry_;
  RecordingHooks hooks_;
  std::shared_ptr<ModelRuntime> runtime_;
  std::unique_ptr<ApiServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ApiServerTest, HealthIs503WhileLoadingThen200) {
  start({}, {}, {}, /*ready=*/false);
  auto loading = client_->Get("/health");
  ASSERT_TRUE(loading);
  EXPECT_EQ(loading->status, 503);
  auto models = client_->Get("/v1/models", {{"Authorization", "Bearer x"}});
  EXPECT_EQ(models->status, 503);
  server_->set_ready(runtime_, hooks_);
  auto ready = client_->Get("/health");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  // The queue, so a server whose jobs stopped moving is visible from outside.
  const json health = json::parse(ready->body);
  EXPECT_EQ(health["status"], "ok");
  EXPECT_EQ(health["queue"]["waiting"], 0);
  EXPECT_EQ(health["queue"]["running"], 0);
  EXPECT_EQ(health["queue"]["oldest_wait_ms"], 0);
  EXPECT_EQ(health["queue"]["stalled"], false);
}

TEST_F(ApiServerTest, ChatReturnsTheScriptWithUsageAndTimings) {
  start({.script = "Hello world"});
  json r = post_json("/v1/chat/completions", chat("hi"));
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["model"], "fake-model");
  EXPECT_EQ(r["choices"][0]["message"]["content"], "Hello world");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  auto prompt = runtime_->render_chat(json::array({{{"role", "user"}, {"content", "hi"}}}),
                                      nlohmann::ordered_json::array(), true,
                                      nlohmann::ordered_json::object());
  EXPECT_EQ(r["usage"]["prompt_tokens"], prompt.ids.size());
  EXPECT_EQ(r["usage"]["completion_tokens"], 12);  // 11 bytes + <|im_end|>
  EXPECT_EQ(r["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  EXPECT_EQ(r["timings"]["cached"], 0);
  EXPECT_EQ(r["timings"]["prefill"], prompt.ids.size());
  for (const char* key : {"prefill_ms", "ttft_ms", "decode_ms", "decode_tokens_per_second"}) {
    EXPECT_TRUE(r["timings"][key].is_number()) << key;
  }
  std::lock_guard<std::mutex> lock(hooks_.mutex);
  EXPECT_EQ(hooks_.prompt_ends, 1);
  EXPECT_EQ(hooks_.generation_ends, 1);
}

TEST_F(ApiServerTest, LargeBodyLabelledAsAFormIsReadAsJson) {
  // curl -d and urllib send application/x-www-form-urlencoded; httplib would cap that at 8 KB.
  start({.script = "ok", .context_length = 40000});
  json body = chat(std::string(12000, 'x'));
  auto res = client_->Post("/v1/chat/completions", {{"Authorization", "Bearer test"}}, body.dump(),
                           "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json::parse(res->body)["choices"][0]["message"]["content"], "ok");
}

TEST_F(ApiServerTest, StreamedChatConcatenatesToTheWholeReply) {
  start({.script = "Hello world"});
  auto res =
      post("/v1/chat/completions",
           chat("hi", {{"stream", true}, {"stream_options", {{"include_usage", true}}}}).dump());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
  auto events = parse_sse(res->body);
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events.back().data, "[DONE]");
  std::string content;
  std::string finish;
  json usage;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    json chunk = json::parse(events[i].data);
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    if (chunk.contains("usage")) usage = chunk["usage"];
    if (chunk["choices"].empty()) continue;
    const json& choice = chunk["choices"][0];
    content += choice["delta"].value("content", "");
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
  }
  EXPECT_EQ(json::parse(events[0].data)["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(content, "Hello world");
  EXPECT_EQ(finish, "stop");
  EXPECT_EQ(usage["completion_tokens"], 12);
}

TEST_F(ApiServerTest, ReasoningAndToolCallsAreSeparated) {
  start({.script = kToolScript});
  json r =
      post_json("/v1/chat/completions", chat("weather?", {{"tools", json::parse(kWeatherTool)}}));
  const json& message = r["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "check the weather");
  EXPECT_EQ(message["content"], "Let me look.");
  ASSERT_EQ(message["tool_calls"].size(), 1u);
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(message["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            (json{{"city", "Paris"}}));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
}

const char kTwoTools[] = R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}}}}])";

// The fake model writes a call's body but never opens it: left alone (auto) that is content;
// tool_choice "required" (OpenAI) or "any" (Anthropic) forces the <tool_call> and so a call.
TEST_F(ApiServerTest, RequiredToolChoiceForcesACall) {
  start({.script =
             "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"});
  json tools = json::parse(kTwoTools);
  json free = post_json("/v1/chat/completions", chat("weather?", {{"tools", tools}}));
  EXPECT_EQ(free["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(free["choices"][0]["message"].contains("tool_calls"));

  json forced = post_json("/v1/chat/completions",
                          chat("weather?", {{"tools", tools}, {"tool_choice", "required"}}));
  EXPECT_EQ(forced["choices"][0]["finish_reason"], "tool_calls");
  const json& calls = forced["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(calls[0]["function"]["arguments"].get<std::string>()),
            (json{{"city", "Paris"}}));

  json anthropic = post_json(
      "/v1/messages",
      {{"model", "fake-model"},
       {"max_tokens", 200},
       {"temperature", 0},
       {"messages", {{{"role", "user"}, {"content", "weather?"}}}},
       {"tools", {{{"name", "get_weather"}, {"input_schema", tools[0]["function"]["parameters"]}}}},
       {"tool_choice", {{"type", "any"}}}});
  EXPECT_EQ(anthropic["stop_reason"], "tool_use");
  EXPECT_EQ(anthropic["content"].back()["type"], "tool_use");
  EXPECT_EQ(anthropic["content"].back()["name"], "get_weather");
}

// The model writes two calls, the second malformed ("days" a word). parallel_tool_calls false
// ends the turn after the first, with or without the tool-call grammar; the grammar, on by
// default, also holds the second call of a parallel reply to its schema (the fake model, off
// its script there, starts it over: more calls follow, each held too).
TEST_F(ApiServerTest, ParallelToolCallsFalseAllowsOneCall) {
  const char* script =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"days\": "
      "two}}\n</tool_call>";
  const json tools = json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object",
      "properties": {"days": {"type": "integer", "minimum": 0, "maximum": 9}}}}}])");
  for (bool grammar : {false, true}) {
    ServerOptions options;
    options.tool_call_grammar = grammar;
    start({.script = script}, options);
    json one = post_json("/v1/chat/completions",
                         chat("weather?", {{"tools", tools}, {"parallel_tool_calls", false}}));
    EXPECT_EQ(one["choices"][0]["finish_reason"], "tool_calls") << grammar;
    ASSERT_EQ(one["choices"][0]["message"]["tool_calls"].size(), 1u) << one.dump();
    EXPECT_EQ(one["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "get_weather");

    json both = post_json("/v1/chat/completions", chat("weather?", {{"tools", tools}}));
    const json& calls = both["choices"][0]["message"]["tool_calls"];
    if (grammar) {
      ASSERT_GE(calls.size(), 2u) << both.dump();
      EXPECT_EQ(calls[1]["function"]["name"], "get_time");
      for (const json& call : calls) {
        json arguments = json::parse(call["function"]["arguments"].get<std::string>());
        if (call["function"]["name"] == "get_time") {
          EXPECT_TRUE(arguments["days"].is_number_integer()) << both.dump();
        }
      }
    } else {
      // Without it the malformed second call is text.
      EXPECT_EQ(calls.size(), 1u) << both.dump();
      EXPECT_NE(both["choices"][0]["message"]["content"].get<std::string>().find("two"),
                std::string::npos);
    }
    server_->stop(std::chrono::milliseconds(2000));
    server_.reset();
  }
}

// A strict tool's calls are guaranteed to conform: a keyword the engine cannot enforce is the
// client's 400, naming the tool and the keyword (OpenAI function.strict, Anthropic strict).
TEST_F(ApiServerTest, StrictToolWithAnUnenforceableKeywordIs400) {
  start();
  const json parameters = json::parse(
      R"({"type": "object", "properties": {"ids": {"type": "array", "uniqueItems": true}}})");
  json fn = {{"name", "tag"}, {"parameters", parameters}, {"strict", true}};
  auto openai = post("/v1/chat/completions",
                     chat("x", {{"tools", {{{"type", "function"}, {"function", fn}}}}}).dump());
  ASSERT_TRUE(openai);
  EXPECT_EQ(openai->status, 400);
  EXPECT_NE(openai->body.find("uniqueItems"), std::string::npos) << openai->body;
  EXPECT_NE(openai->body.find("tag"), std::string::npos) << openai->body;
  auto anthropic =
      post("/v1/messages",
           json{{"model", "fake-model"},
                {"max_tokens", 20},
                {"messages", {{{"role", "user"}, {"content", "x"}}}},
                {"tools", {{{"name", "tag"}, {"input_schema", parameters}, {"strict", true}}}}}
               .dump());
  ASSERT_TRUE(anthropic);
  EXPECT_EQ(anthropic->status, 400);
  // Not strict: the keyword is dropped from the constraint and the request served.
  fn.erase("strict");
  post_json("/v1/chat/completions",
            chat("x", {{"tools", {{{"type", "function"}, {"function", fn}}}}}));
}

// A named function is forced with its name, whatever the model would have called; in either
// format, streamed or not.
TEST_F(ApiServerTest, NamedToolChoiceForcesThatFunction) {
  struct Case {
    ToolCallFormat format;
    const char* script;  // the arguments, as the model writes them after the forced name
  };
  for (const Case& c : {Case{ToolCallFormat::kJson, " {\"city\": \"Paris\"}}\n</tool_call>"},
                        Case{ToolCallFormat::kXml,
                             "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"}}) {
    start({.script = c.script, .tool_call_format = c.format});
    json choice = {{"type", "function"}, {"function", {{"name", "get_time"}}}};
    json r = post_json("/v1/chat/completions",
                       chat("time?", {{"tools", json::parse(kTwoTools)}, {"tool_choice", choice}}));
    EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
    const json& calls = r["choices"][0]["message"]["tool_calls"];
    ASSERT_EQ(calls.size(), 1u) << r.dump();
    EXPECT_EQ(calls[0]["function"]["name"], "get_time");
    EXPECT_EQ(json::parse(calls[0]["function"]["arguments"].get<std::string>()),
              (json{{"city", "Paris"}}));

    auto streamed =
        post("/v1/chat/completions",
             chat("time?",
                  {{"tools", json::parse(kTwoTools)}, {"tool_choice", choice}, {"stream", true}})
                 .dump());
    std::string name, finish;
    for (const auto& event : parse_sse(streamed->body)) {
      if (event.data == "[DONE]") continue;
      json chunk = json::parse(event.data);
      if (chunk["choices"].empty()) continue;
      const json& choice0 = chunk["choices"][0];
      for (const json& call : choice0["delta"].value("tool_calls", json::array())) {
        name += call["function"].value("name", "");
      }
      if (!choice0["finish_reason"].is_null()) finish = choice0["finish_reason"];
    }
    EXPECT_EQ(name, "get_time");
    EXPECT_EQ(finish, "tool_calls");
    server_->stop(std::chrono::milliseconds(0));
  }
}

// When the prompt opens <think>, the reasoning is left alone and the call forced after it: the
// model here reasons, then calls; forcing any earlier would derail it.
TEST_F(ApiServerTest, ToolChoiceWaitsForTheReasoningToClose) {
  start({.script = "ponder</think><tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                   "{\"city\": \"Paris\"}}\n</tool_call>"});
  json choice = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
  json r = post_json("/v1/chat/completions",
                     chat("weather?", {{"tools", json::parse(kTwoTools)},
                                       {"tool_choice", choice},
                                       {"chat_template_kwargs", {{"enable_thinking", true}}}}));
  const json& message = r["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "ponder");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
  ASSERT_EQ(message["tool_calls"].size(), 1u);
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
}

TEST_F(ApiServerTest, AnthropicStreamHasTheRealEventSequence) {
  start({.script = kToolScript});
  json body = {{"model", "fake-model"},
               {"max_tokens", 200},
               {"stream", true},
               {"temperature", 0},
               {"messages", {{{"role", "user"}, {"content", "weather?"}}}},
               {"tools",
                {{{"name", "get_weather"},
                  {"input_schema", json::parse(kWeatherTool)[0]["function"]["parameters"]}}}}};
  auto res = post("/v1/messages", body.dump(), {{"x-api-key", "k"}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  std::vector<std::string> names;
  std::string thinking, text, input_json;
  json stop;
  for (const auto& e : parse_sse(res->body)) {
    names.push_back(e.event);
    json data = json::parse(e.data);
    if (e.event == "content_block_delta") {
      const json& d = data["delta"];
      if (d["type"] == "thinking_delta") thinking += d["thinking"].get<std::string>();
      if (d["type"] == "text_delta") text += d["text"].get<std::string>();
      if (d["type"] == "input_json_delta") input_json += d["partial_json"].get<std::string>();
    }
    if (e.event == "message_delta") stop = data;
  }
  EXPECT_EQ(names.front(), "message_start");
  EXPECT_EQ(names.back(), "message_stop");
  EXPECT_EQ(names[names.size() - 2], "message_delta");
  EXPECT_EQ(thinking, "check the weather");
  EXPECT_EQ(text, "Let me look.");
  EXPECT_EQ(json::parse(input_json), (json{{"city", "Paris"}}));
  EXPECT_EQ(stop["delta"]["stop_reason"], "tool_use");
  EXPECT_GT(stop["usage"]["output_tokens"], 0);
}

TEST_F(ApiServerTest, StopSequencesAndMaxTokens) {
  start({.script = "one two three"});
  json stopped = post_json("/v1/chat/completions", chat("x", {{"stop", {"thr"}}}));
  EXPECT_EQ(stopped["choices"][0]["message"]["content"], "one two ");
  EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");
  json cut = post_json("/v1/chat/completions", chat("x", {{"max_tokens", 3}}));
  EXPECT_EQ(cut["choices"][0]["message"]["content"], "one");
  EXPECT_EQ(cut["choices"][0]["finish_reason"], "length");
  json anthropic =
      post_json("/v1/messages", {{"max_tokens", 50},
                                 {"temperature", 0},  // Anthropic's default is 1: sampled
                                 {"stop_sequences", {"two"}},
                                 {"messages", {{{"role", "user"}, {"content", "x"}}}}});
  EXPECT_EQ(anthropic["stop_reason"], "stop_sequence");
  EXPECT_EQ(anthropic["stop_sequence"], "two");
  EXPECT_EQ(anthropic["content"][0]["text"], "one ");
}

TEST_F(ApiServerTest, CompletionsWithEchoTokenIdsAndLogprobs) {
  start({.script = "abc"});
  json r = post_json(
      "/v1/completions",
      {{"prompt", "xy"}, {"echo", true}, {"max_tokens", 10}, {"temperature", 0}, {"logprobs", 2}});
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["choices"][0]["text"], "xyabc");
  const json& lp = r["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 4u);  // a, b, c, <|im_end|>
  EXPECT_EQ(lp["tokens"][0], "a");
  EXPECT_EQ(lp["text_offset"][0], 2);
  EXPECT_LT(lp["token_logprobs"][0].get<double>(), 0.0);
  EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);
  json ids =
      post_json("/v1/completions", {{"prompt", {120, 121}}, {"max_tokens", 2}, {"temperature", 0}});
  EXPECT_EQ(ids["choices"][0]["text"], "ab");
  EXPECT_EQ(ids["usage"]["prompt_tokens"], 2);
}

TEST_F(ApiServerTest, ChatLogprobs) {
  start({.script = "ab"});
  json r = post_json("/v1/chat/completions", chat("x", {{"logprobs", true}, {"top_logprobs", 2}}));
  const json& content = r["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 3u);
  EXPECT_EQ(content[0]["token"], "a");
  EXPECT_EQ(content[0]["bytes"], json::array({97}));
  EXPECT_EQ(content[0]["top_logprobs"][0]["token"], "a");
}

TEST_F(ApiServerTest, SeededSamplingIsReproducible) {
  start({.script = "some longer reply text"});
  json body = chat("x", {{"temperature", 5.0}, {"seed", 42}, {"max_tokens", 8}});
  json a = post_json("/v1/chat/completions", body);
  json b = post_json("/v1/chat/completions", body);
  EXPECT_EQ(a["choices"][0]["message"], b["choices"][0]["message"]);
}

TEST_F(ApiServerTest, AuthRules) {
  ServerOptions options;
  options.api_key = "secret";
  start({}, options);
  auto none = post("/v1/chat/completions", chat("x").dump(), {});
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(json::parse(none->body)["error"]["type"], "authentication_error");
  EXPECT_EQ(
      post("/v1/chat/completions", chat("x").dump(), {{"Authorization", "Bearer nope"}})->status,
      401);
  EXPECT_EQ(
      post("/v1/chat/completions", chat("x").dump(), {{"Authorization", "Bearer secret"}})->status,
      200);
  // x-api-key counts on Anthropic routes only.
  EXPECT_EQ(post("/v1/chat/completions", chat("x").dump(), {{"x-api-key", "secret"}})->status, 401);
  json msg = {{"max_tokens", 5}, {"messages", {{{"role", "user"}, {"content", "x"}}}}};
  auto anthropic = post("/v1/messages", msg.dump(), {{"x-api-key", "wrong"}});
  EXPECT_EQ(anthropic->status, 401);
  EXPECT_EQ(json::parse(anthropic->body)["error"]["type"], "authentication_error");
  EXPECT_EQ(post("/v1/messages", msg.dump(), {{"x-api-key", "secret"}})->status, 200);
  EXPECT_EQ(client_->Get("/health")->status, 200);
  EXPECT_EQ(client_->Get("/v1/models")->status, 401);
}

TEST_F(ApiServerTest, ErrorsHaveTheRightStatusAndShape) {
  ServerOptions options;
  options.max_context = 64;
  options.max_body_mb = 1;
  start({}, options);
  auto malformed = post("/v1/chat/completions", "{not json");
  EXPECT_EQ(malformed->status, 400);
  EXPECT_EQ(json::parse(malformed->body)["error"]["type"], "invalid_request_error");

  auto missing = post("/v1/messages", R"({"max_tokens": 5})");
  EXPECT_EQ(missing->status, 400);
  json missing_body = json::parse(missing->body);
  EXPECT_EQ(missing_body["type"], "error");
  EXPECT_NE(missing_body["error"]["message"].get<std::string>().find("messages"),
            std::string::npos);

  auto mistyped = post("/v1/chat/completions", chat("x", {{"max_tokens", "many"}}).dump());
  EXPECT_EQ(mistyped->status, 400);
  EXPECT_EQ(json::parse(mistyped->body)["error"]["param"], "max_tokens");

  auto overflow = post("/v1/chat/completions", chat(std::string(80, 'x')).dump());
  EXPECT_EQ(overflow->status, 400);
  std::string message = json::parse(overflow->body)["error"]["message"];
  EXPECT_NE(message.find("leaves no room"), std::string::npos) << message;
  EXPECT_NE(message.find("limit of 64"), std::string::npos) << message;
  EXPECT_NE(message.find("the prompt has "), std::string::npos) << message;

  // The declared length alone is refused, before any of the body is read.
  std::string too_big = raw_request(server_->port(),
                                    "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                                    "Authorization: Bearer x\r\nContent-Type: application/json\r\n"
                                    "Content-Length: 2000000\r\n\r\n{}");
  EXPECT_EQ(too_big.rfind("HTTP/1.1 413", 0), 0u) << too_big;
  EXPECT_NE(too_big.find("\"code\":413"), std::string::npos) << too_big;

  auto wrong_method = client_->Get("/v1/chat/completions", {{"Authorization", "Bearer x"}});
  EXPECT_EQ(wrong_method->status, 405);
  EXPECT_EQ(json::parse(wrong_method->body)["error"]["code"], 405);

  auto no_route = client_->Get("/v2/nothing");
  EXPECT_EQ(no_route->status, 404);
  EXPECT_TRUE(json::parse(no_route->body).contains("error"));
}

// An oversize body is refused before it is read, so the connection cannot carry another request:
// whether the client uploads it all, stops half-way, or asked first (Expect: 100-continue), it
// gets a whole 413 (with its length) and the server closes, and the server keeps serving.
TEST_F(ApiServerTest, OversizeBodyGets413AndTheConnectionCloses) {
  ServerOptions options;
  options.max_body_mb = 1;
  start({}, options);
  const std::string head =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer x\r\n"
      "Content-Type: application/json\r\nContent-Length: 3000000\r\n";
  struct Case {
    const char* what;
    std::string extra_headers;
    size_t body_bytes;
  };
  for (const Case& c : {Case{"uploads it all", "", 3000000}, Case{"stops half-way", "", 100000},
                        Case{"asks first", "Expect: 100-continue\r\n", 0}}) {
    RawReply reply =
        upload_and_read(server_->port(), head + c.extra_headers + "\r\n", c.body_bytes);
    EXPECT_EQ(reply.text.rfind("HTTP/1.1 413", 0), 0u) << c.what << ": " << reply.text;
    EXPECT_NE(reply.text.find("Connection: close\r\n"), std::string::npos) << c.what;
    auto body_at = reply.text.find("\r\n\r\n");
    ASSERT_NE(body_at, std::string::npos) << c.what;
    std::string body = reply.text.substr(body_at + 4);
    EXPECT_NE(reply.text.find("Content-Length: " + std::to_string(body.size()) + "\r\n"),
              std::string::npos)
        << c.what << ": " << reply.text;
    EXPECT_EQ(json::parse(body)["error"]["code"], 413) << c.what;
    EXPECT_TRUE(reply.closed_by_server) << c.what;
    post_json("/v1/chat/completions", chat("still serving"));
  }
}

TEST_F(ApiServerTest, FullQueueIs429) {
  ServerOptions options;
  options.parallel = 1;  // the one slot busy, no room to wait
  options.max_queue = 0;
  start({.script = "slow reply", .decode_delay_ms = 100}, options);
  std::thread first([&] {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(30, 0);
    c.Post("/v1/chat/completions", {{"Authorization", "Bearer x"}}, chat("a").dump(),
           "application/json");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto second = post("/v1/chat/completions", chat("b").dump());
  EXPECT_EQ(second->status, 429);
  EXPECT_EQ(json::parse(second->body)["error"]["type"], "rate_limit_error");
  EXPECT_EQ(second->get_header_value("Retry-After"), "1");
  first.join();
}

// Admission by memory (--max-batch-memory): a request whose prompt + max_tokens could not fit in
// the budget even alone is refused at once with 503 and Retry-After; a smaller one is served.
TEST_F(ApiServerTest, ARequestThatCannotFitInTheBatchMemoryIs503WithRetryAfter) {
  ServerOptions options;
  options.max_batch_memory_mb = 1;
  start({.script = "fits"}, options, {}, /*ready=*/false);
  StateLayout& layout = runtime_->state_layout;  // 4 KiB per token: 256 tokens per MiB
  layout.num_layers = 4;
  layout.attention_layers = {0, 1, 2, 3};
  layout.kv_heads = 2;
  layout.head_dim = 64;
  layout.kv_dtype = DType::kF32;
  server_->set_ready(runtime_, hooks_);
  EXPECT_EQ(server_->scheduler_limits().memory_budget_bytes, 1u << 20);
  auto refused = post("/v1/chat/completions", chat("x", {{"max_tokens", 500}}).dump());
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(refused->get_header_value("Retry-After"), "5");
  EXPECT_NE(refused->body.find("--max-batch-memory"), std::string::npos) << refused->body;
  json served = post_json("/v1/chat/completions", chat("x", {{"max_tokens", 20}}));
  EXPECT_EQ(served["choices"][0]["message"]["content"], "fits");
}

TEST_F(ApiServerTest, ConcurrentClientsAllGetTheirReply) {
  start({.script = "concurrent reply"});
  std::vector<std::thread> clients;
  std::atomic<int> correct{0};
  for (int i = 0; i < 6; ++i) {
    clients.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", server_->port());
      c.set_read_timeout(30, 0);
      json body = chat("q" + std::to_string(i), {{"stream", i % 2 == 0}});
      auto res = c.Post("/v1/chat/completions", {{"Authorization", "Bearer x"}}, body.dump(),
                        "application/json");
      if (!res || res->status != 200) return;
      std::string content;
      if (i % 2 == 0) {
        for (const auto& e : parse_sse(res->body)) {
          if (e.data.empty() || e.data == "[DONE]") continue;
          json chunk = json::parse(e.data);
          if (!chunk["choices"].empty())
            content += chunk["choices"][0]["delta"].value("content", "");
        }
      } else {
        content = json::parse(res->body)["choices"][0]["message"]["content"];
      }
      if (content == "concurrent reply") ++correct;
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(correct.load(), 6);
}

TEST_F(ApiServerTest, KeepAliveAndProgressWhileWaitingForTheFirstToken) {
  ApiServerSettings settings;
  settings.keepalive_seconds = 0.05;
  settings.runner.prefill_chunk_tokens = 16;
  start({.script = "ok", .prefill_delay_ms_per_token = 5}, {}, settings);
  auto res = post("/v1/chat/completions", chat("a prompt long enough to take a while",
                                               {{"stream", true}, {"return_progress", true}})
                                              .dump());
  ASSERT_TRUE(res);
  int keepalives = 0;
  json last_progress;
  for (const auto& e : parse_sse(res->body)) {
    if (e.comment == "keep-alive") ++keepalives;
    if (e.data.empty() || e.data == "[DONE]") continue;
    json chunk = json::parse(e.data);
    if (chunk.contains("prompt_progress")) last_progress = chunk["prompt_progress"];
  }
  EXPECT_GT(keepalives, 0);
  ASSERT_FALSE(last_progress.is_null());
  EXPECT_EQ(last_progress["processed"], last_progress["total"]);
  EXPECT_EQ(last_progress["cache"], 0);

  json anthropic = {
      {"max_tokens", 5},
      {"stream", true},
      {"messages", {{{"role", "user"}, {"content", "a prompt long enough to wait"}}}}};
  auto pinged = post("/v1/messages", anthropic.dump());
  int pings = 0;
  for (const auto& e : parse_sse(pinged->body)) pings += e.event == "ping";
  EXPECT_GT(pings, 0);
}

TEST_F(ApiServerTest, DisconnectStopsGenerationAndCallsOnInterrupted) {
  start({.script = std::string(400, 'z'), .decode_delay_ms = 5});
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/chat/completions";
  req.headers = {{"Authorization", "Bearer x"}, {"Content-Type", "application/json"}};
  req.body = chat("x", {{"stream", true}}).dump();
  std::string received;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    received.append(data, n);
    return received.size() < 2000;  // hang up after a few chunks
  };
  client_->send(req);
  // The reply text the client saw (whole SSE events only).
  size_t seen = 0;
  for (const auto& e : parse_sse(received.substr(0, received.rfind("\n\n") + 2))) {
    if (e.data.empty() || e.data == "[DONE]") continue;
    json chunk = json::parse(e.data);
    if (!chunk["choices"].empty()) seen += chunk["choices"][0]["delta"].value("content", "").size();
  }
  ASSERT_GT(seen, 0u);
  for (int i = 0; i < 200; ++i) {
    {
      std::lock_guard<std::mutex> lock(hooks_.mutex);
      if (!hooks_.interrupted.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::lock_guard<std::mutex> lock(hooks_.mutex);
  ASSERT_EQ(hooks_.interrupted.size(), 1u);
  EXPECT_EQ(hooks_.generation_ends, 0);
  // It stopped long before the 400-token script ended.
  size_t prompt =
      runtime_
          ->render_chat(nlohmann::ordered_json::parse(R"([{"role":"user","content":"x"}])"),
                        nlohmann::ordered_json::array(), true, nlohmann::ordered_json::object())
          .ids.size();
  EXPECT_GT(hooks_.interrupted[0].size(), prompt);
  EXPECT_LT(hooks_.interrupted[0].size(), prompt + 200);
  // It holds what the stream delivered (one token per character here): at least what the client
  // read, never more than was generated.
  EXPECT_GE(hooks_.interrupted[0].size(), prompt + seen);
  EXPECT_LE(int64_t(hooks_.interrupted[0].size()), hooks_.interrupted_session_positions[0] + 1);
}

TEST_F(ApiServerTest, ANonStreamingRequestWhoseClientLeftIsCancelled) {
  // 400 tokens at 10 ms each: 4 s if it ran to the end.
  start({.script = std::string(400, 'z'), .decode_delay_ms = 10});
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::string body = chat("x").dump();
  std::string request =
      "POST /v1/chat/completions HTTP/1.1\r\nAuthorization: Bearer x\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  close(fd);
  // The engine is free again long before the script would have ended.
  const auto begin = std::chrono::steady_clock::now();
  json next = post_json("/v1/chat/completions", chat("next", {{"max_tokens", 2}}));
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::milliseconds(2500));
  std::lock_guard<std::mutex> lock(hooks_.mutex);
  EXPECT_EQ(hooks_.generation_ends, 1);  // only the second request ran to its end
}

TEST_F(ApiServerTest, AdminRoutesAreClosedOnAPublicHostWithoutAKey) {
  ServerOptions options;
  options.host = "0.0.0.0";
  start({}, options);
  auto closed = client_->Post("/admin/cache/gc", {{"Authorization", "Bearer anything"}}, "",
                              "application/json");
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->status, 403);
  EXPECT_NE(closed->body.find("--api-key"), std::string::npos);
  // The model routes keep the qMLX contract: any non-empty key.
  EXPECT_EQ(client_->Get("/v1/models", {{"Authorization", "Bearer anything"}})->status, 200);
}

TEST_F(ApiServerTest, AdminRoutesOpenWithAKeyOnAPublicHost) {
  ServerOptions options;
  options.host = "0.0.0.0";
  options.api_key = "secret";
  start({}, options);
  auto wrong = client_->Post("/admin/cache/gc", {{"Authorization", "Bearer anything"}}, "",
                             "application/json");
  EXPECT_EQ(wrong->status, 401);
  auto right = client_->Post("/admin/cache/gc", {{"Authorization", "Bearer secret"}}, "",
                             "application/json");
  EXPECT_EQ(right->status, 404);  // opened; this test server has no cache
}

TEST_F(ApiServerTest, StopCutsInFlightRequestsAndFlushesHooks) {
  start({.script = std::string(2000, 'z'), .decode_delay_ms = 2});
  std::thread client([&] {
    httplib::Client c("127.0.0.1", server_->port());
    c.Post("/v1/chat/completions", {{"Authorization", "Bearer x"}},
           chat("x", {{"stream", true}}).dump(), "application/json");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto begin = std::chrono::steady_clock::now();
  server_->stop(std::chrono::milliseconds(100));
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(3));
  client.join();
  EXPECT_TRUE(hooks_.flushed.load());
  std::lock_guard<std::mutex> lock(hooks_.mutex);
  EXPECT_EQ(hooks_.interrupted.size(), 1u);
}

TEST_F(ApiServerTest, TokenizeDetokenizeApplyTemplateAndCountTokens) {
  start();
  json t = post_json("/tokenize", {{"content", "hi<|im_end|>"}});
  EXPECT_EQ(t["tokens"], json::array({104, 105, 256}));
  json pieces = post_json("/tokenize", {{"content", "hi"}, {"with_pieces", true}});
  EXPECT_EQ(pieces["tokens"][0], (json{{"id", 104}, {"piece", "h"}}));
  EXPECT_EQ(post_json("/detokenize", {{"tokens", {104, 105}}})["content"], "hi");
  json applied =
      post_json("/apply-template", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}});
  EXPECT_EQ(applied["prompt"], "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(applied["tokens"].size(),
            runtime_->tokenizer->encode(applied["prompt"].get<std::string>(), true).size());
  // The generation prompt is <|im_start|> plus "assistant\n": 11 tokens after the last message.
  EXPECT_EQ(applied["last_message_end"].get<size_t>(), applied["tokens"].size() - 11);
  json counted = post_json("/v1/messages/count_tokens",
                           {{"messages", {{{"role", "user"}, {"content", "hi"}}}}});
  EXPECT_EQ(counted["input_tokens"], applied["tokens"].size());
}

TEST_F(ApiServerTest, MetricsScrapeCountsRequests) {
  start();
  post_json("/v1/chat/completions", chat("x"));
  post("/v1/chat/completions", "{bad");
  httplib::Client metrics("127.0.0.1", server_->metrics_port());
  auto scrape = metrics.Get("/metrics");
  ASSERT_TRUE(scrape);
  EXPECT_EQ(scrape->status, 200);
  EXPECT_NE(
      scrape->body.find("qmlx_requests_total{route=\"/v1/chat/completions\",status=\"200\"} 1"),
      std::string::npos)
      << scrape->body;
  EXPECT_NE(
      scrape->body.find("qmlx_requests_total{route=\"/v1/chat/completions\",status=\"400\"} 1"),
      std::string::npos);
  EXPECT_NE(scrape->body.find("qmlx_completion_tokens_total 12"), std::string::npos);
  EXPECT_NE(scrape->body.find("qmlx_ttft_seconds_count 1"), std::string::npos);
}

// What Claude Code sends: its attribution header first in `system`, tools not in name order.
json claude_code_request() {
  json input = {{"type", "object"}};
  return json{
      {"model", "fake-model"},
      {"max_tokens", 20},
      {"temperature", 0},
      {"system",
       {{{"type", "text"},
         {"text", "x-anthropic-billing-header: cc_version=2.1.332.0b8; cc_entrypoint=sdk-cli;"}},
        {{"type", "text"}, {"text", "You are a Claude agent."}}}},
      {"messages", {{{"role", "user"}, {"content", "hi"}}}},
      {"tools",
       {{{"name", "Write"}, {"input_schema", input}},
        {{"name", "Bash"}, {"input_schema", input}}}}};
}

const char kBillingCounter[] =
    "qmlx_prompt_normalizations_total{rule=\"strip_claude_code_billing_header\"} ";
const char kToolOrderCounter[] = "qmlx_prompt_normalizations_total{rule=\"canonical_tool_order\"} ";

class PromptNormalizationTest : public ApiServerTest {
 protected:
  std::string scrape() {
    httplib::Client metrics("127.0.0.1", server_->metrics_port());
    auto res = metrics.Get("/metrics");
    return res ? res->body : "";
  }
  // Sends Claude Code's request `n` times; returns the log the server wrote meanwhile and the
  // metrics after, once the server stopped (so every log line is written).
  std::pair<std::string, std::string> send_and_stop(int n) {
    ::testing::internal::CaptureStderr();
    for (int i = 0; i < n; ++i) {
      auto res = post("/v1/messages", claude_code_request().dump(), {{"x-api-key", "k"}});
      EXPECT_TRUE(res && res->status == 200);
    }
    std::string metrics = scrape();
    server_->stop(std::chrono::milliseconds(2000));
    return {::testing::internal::GetCapturedStderr(), metrics};
  }
};

// The rules rewrite the request, its log line names them and the per-rule counter moves.
TEST_F(PromptNormalizationTest, RulesThatFireAreLoggedAndCounted) {
  ServerOptions all;
  all.prompt_normalization.set("canonical_tool_order", true);  // off by default
  start({}, all);
  EXPECT_NE(scrape().find(kBillingCounter + std::string("0")), std::string::npos);
  auto [log, metrics] = send_and_stop(2);
  EXPECT_NE(metrics.find(kBillingCounter + std::string("2")), std::string::npos) << metrics;
  EXPECT_NE(metrics.find(kToolOrderCounter + std::string("2")), std::string::npos) << metrics;
  EXPECT_NE(log.find("uid=2 "), std::string::npos) << log;
  EXPECT_NE(log.find("normalized=strip_claude_code_billing_header,canonical_tool_order\n"),
            std::string::npos)
      << log;
}

TEST_F(PromptNormalizationTest, SwitchedOffRulesNeitherLogNorCount) {
  ServerOptions off;
  off.prompt_normalization.set("strip_claude_code_billing_header", false);
  off.prompt_normalization.set("canonical_tool_order", false);
  start({}, off);
  auto [log, metrics] = send_and_stop(1);
  EXPECT_NE(metrics.find(kBillingCounter + std::string("0")), std::string::npos) << metrics;
  EXPECT_NE(metrics.find(kToolOrderCounter + std::string("0")), std::string::npos) << metrics;
  EXPECT_NE(log.find("uid=1 MISS"), std::string::npos) << log;
  EXPECT_EQ(log.find("normalized="), std::string::npos) << log;
}

// max_tokens beyond the context is capped at what is left: the reply stops at the limit.
TEST_F(ApiServerTest, MaxTokensIsCappedAtTheContextLeft) {
  ServerOptions options;
  options.max_context = 40;
  start({.script = std::string(200, 'z')}, options);
  json r = post_json("/v1/chat/completions", chat("x", {{"max_tokens", 128000}}));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["usage"]["prompt_tokens"].get<int>() + r["usage"]["completion_tokens"].get<int>(),
            40);
}

// A single-model server serves whatever model name a client sends (agents send claude-* and
// gpt-* names for side requests) and reports its own id.
TEST_F(ApiServerTest, AnyModelNameIsServedByDefault) {
  start({.script = "ok"});
  auto r = post("/v1/messages", R"({"model": "claude-haiku-9", "max_tokens": 5,
      "messages": [{"role": "user", "content": "x"}]})");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["model"], "fake-model");
  json chat_reply = post_json("/v1/chat/completions", chat("x", {{"model", "gpt-9"}}));
  EXPECT_EQ(chat_reply["model"], "fake-model");
}

// --strict-model-id restores the 404, checked before the schema so the error names the real
// problem; --model-alias names are served and listed.
TEST_F(ApiServerTest, StrictModelIdAndAliases) {
  ServerOptions options;
  options.strict_model_id = true;
  options.model_aliases = {"qwen-local"};
  start({.script = "ok"}, options);
  auto unknown = post("/v1/messages", R"({"model": "claude-x", "max_tokens": "five"})");
  EXPECT_EQ(unknown->status, 404) << unknown->body;
  EXPECT_EQ(json::parse(unknown->body)["error"]["type"], "not_found_error");
  EXPECT_NE(unknown->body.find("claude-x"), std::string::npos) << unknown->body;
  auto unknown_chat = post("/v1/chat/completions", R"({"model": "gpt-x"})");
  EXPECT_EQ(unknown_chat->status, 404) << unknown_chat->body;
  EXPECT_EQ(json::parse(unknown_chat->body)["error"]["param"], "model");
  json alias = post_json("/v1/chat/completions", chat("x", {{"model", "qwen-local"}}));
  EXPECT_EQ(alias["model"], "fake-model");
  auto models = client_->Get("/v1/models", {{"Authorization", "Bearer x"}});
  json list = json::parse(models->body);
  ASSERT_EQ(list["data"].size(), 2u);
  EXPECT_EQ(list["data"][0]["id"], "fake-model");
  EXPECT_EQ(list["data"][1]["id"], "qwen-local");
}

// Every request leaves one log line; a rejected one names its uid, route, status and error,
// and the uid is the one the client got in X-Request-Id. Prompt text never appears.
TEST_F(ApiServerTest, RejectedRequestsAreLoggedOnce) {
  start({.script = "ok"});
  ::testing::internal::CaptureStderr();
  auto bad = post("/v1/messages", R"({"model": "m", "max_tokens": 5,
      "messages": [{"role": "robot", "content": "secret prompt text"}]})");
  auto no_route = client_->Post("/v1/nothing", "{}", "application/json");
  auto good = post("/v1/chat/completions", chat("another secret").dump());
  server_->stop(std::chrono::milliseconds(2000));
  std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(bad->status, 400);
  ASSERT_EQ(no_route->status, 404);
  ASSERT_EQ(good->status, 200);
  const std::string uid = bad->get_header_value("X-Request-Id");
  ASSERT_FALSE(uid.empty());
  EXPECT_NE(
      log.find("uid=" + uid + " POST /v1/messages status=400 error=\"'messages[0].role' must be"),
      std::string::npos)
      << log;
  EXPECT_NE(log.find("POST /v1/nothing status=404 error=\"no route for POST /v1/nothing\""),
            std::string::npos)
      << log;
  // The generation's line is its HIT/MISS line, under the uid its response carries.
  const std::string good_uid = good->get_header_value("X-Request-Id");
  EXPECT_NE(log.find("uid=" + good_uid + " MISS cached=0"), std::string::npos) << log;
  EXPECT_EQ(log.find("uid=" + good_uid + " POST"), std::string::npos) << log;
  EXPECT_EQ(log.find("secret"), std::string::npos) << log;
}

// Issue 17 row 1: nesting 60,000 levels deep overflowed a worker's stack and killed the server.
// Every route that reads JSON refuses it with a 400 naming the limit, and the server keeps serving;
// a deep (but legal) tool schema still renders.
TEST_F(ApiServerTest, DeeplyNestedJsonIs400OnEveryRoute) {
  start({.script = "ok"});
  const std::string deep = std::string(60000, '[') + std::string(60000, ']');
  const std::string user = R"({"role":"user","content":"hi"})";
  const std::string tool_call_args =
      R"({"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function",)"
      R"("function":{"name":"f","arguments":)" +
      json(deep).dump() + "}}]}";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/v1/chat/completions", R"({"messages":[{"role":"user","content":)" + deep + "}]}"},
      {"/v1/chat/completions", R"({"messages":[)" + user +
                                   R"(],"tools":[{"type":"function","function":{"name":"f",)"
                                   R"("parameters":)" +
                                   deep + "}}]}"},
      {"/v1/chat/completions", R"({"messages":[)" + user + "," + tool_call_args + "]}"},
      {"/apply-template", R"({"messages":[)" + user + "," + tool_call_args + "]}"},
      {"/apply-template", R"({"messages":[{"role":"user","content":)" + deep + "}]}"},
      {"/v1/completions", R"({"prompt":)" + deep + "}"},
      {"/v1/messages", R"({"max_tokens":5,"messages":[{"role":"user","content":)" + deep + "}]}"},
      {"/v1/messages/count_tokens", R"({"messages":[{"role":"user","content":)" + deep + "}]}"},
      {"/v1/responses", R"({"input":)" + deep + "}"},
      {"/tokenize", R"({"content":)" + deep + "}"},
      {"/admin/cache/snapshots/00000000000000000000000000000000/pin", R"({"pinned":)" + deep + "}"},
  };
  for (const auto& [path, body] : cases) {
    auto res = post(path, body);
    ASSERT_TRUE(res) << path << ": the server died";
    EXPECT_EQ(res->status, 400) << path << ": " << res->body;
    EXPECT_NE(res->body.find("invalid_request_error"), std::string::npos) << res->body;
    EXPECT_NE(res->body.find(std::to_string(kMaxJsonDepth)), std::string::npos) << res->body;
  }
  // A schema 100 levels deep (far beyond real tools) is under the limit and renders.
  std::string schema = R"({"type":"string"})";
  for (int i = 0; i < 50; ++i) schema = R"({"type":"object","properties":{"x":)" + schema + "}}";
  auto applied = post("/apply-template", R"({"messages":[)" + user +
                                             R"(],"tools":[{"type":"function","function":{)"
                                             R"("name":"f","parameters":)" +
                                             schema + "}}]}");
  ASSERT_TRUE(applied);
  EXPECT_EQ(applied->status, 200) << applied->body;
  auto good = post("/v1/chat/completions", chat("still there?").dump());
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200);
}

}  // namespace
}  // namespace qmlx::server
