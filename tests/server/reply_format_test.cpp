// Constrained replies end to end in process: each API's way of asking for JSON (chat and
// completions response_format, Responses text.format, Anthropic output_config.format, the
// grammar field) over a fake model whose own reply is NOT what was asked for, so every valid
// reply proves the mask worked; the errors (a bad schema, strict with a keyword the engine
// cannot enforce, both grammar and response_format).
#include <gtest/gtest.h>
#include <httplib.h>

#include "server/metrics/server_metrics.h"
#include "server/routes/api_server.h"
#include "server/scheduling/generation_runner.h"
#include "server/scheduling/reply_grammars.h"
#include "tests/server/fake_runtime.h"

namespace qmlx::server {
namespace {

using json = nlohmann::json;

// What the fake model says, unconstrained: prose, then JSON with spaces and the wrong types.
const char kScript[] = "Sure! Here it is: {\"city\": 42, \"days\": \"three\"}";

// A model that writes canonical JSON itself: the tests of json_object mode and of a dropped
// keyword check that the constraint lets a valid reply through and ends it by stop. (A model
// that strays inside a free string never comes back to close it: this fake repeats its script.)
// (Its keys in alphabetical order: the tests' bodies are nlohmann::json, whose objects sort them,
// and the canonical order is the schema's.)
const char kObjectScript[] = "{\"n\":2,\"tags\":[\"a\",\"b\"]}";

const json kWeatherSchema = json::parse(R"({
  "type": "object",
  "properties": {"city": {"type": "string", "maxLength": 8}, "days": {"type": "integer",
                 "minimum": 1, "maximum": 7}},
  "required": ["city", "days"],
  "additionalProperties": false})");

class ReplyFormatTest : public ::testing::Test {
 protected:
  // The fake model's own reply is `script` (kScript unless a test needs another).
  void start(const std::string& script = kScript) {
    ServerOptions options;
    options.port = 0;
    server_ = std::make_unique<ApiServer>(options, registry_);
    server_->start();
    testing::FakeModelOptions model;
    model.script = script;
    runtime_ = testing::make_fake_runtime(model);
    server_->set_ready(runtime_, hooks_);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(30, 0);
  }
  void TearDown() override {
    if (server_) server_->stop(std::chrono::milliseconds(2000));
  }

  httplib::Result post(const std::string& path, const json& body) {
    return client_->Post(path.c_str(), {{"Authorization", "Bearer x"}, {"x-api-key", "x"}},
                         body.dump(), "application/json");
  }
  json ok(const std::string& path, const json& body) {
    auto res = post(path, body);
    EXPECT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
    return json::parse(res->body);
  }

  MetricsRegistry registry_;
  testing::RecordingHooks hooks_;
  std::shared_ptr<ModelRuntime> runtime_;
  std::unique_ptr<ApiServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

json chat(json extra) {
  json body = {{"messages", {{{"role", "user"}, {"content", "weather plan"}}}},
               {"max_tokens", 200},
               {"temperature", 0}};
  body.update(extra);
  return body;
}

// Valid for kWeatherSchema, checked by hand (the e2e tests use ajv).
void expect_weather(const std::string& text) {
  SCOPED_TRACE(text);
  json value = json::parse(text);  // throws on invalid JSON
  ASSERT_TRUE(value.is_object());
  ASSERT_EQ(value.size(), 2u);
  ASSERT_TRUE(value["city"].is_string());
  EXPECT_LE(value["city"].get<std::string>().size(), 8u);
  ASSERT_TRUE(value["days"].is_number_integer());
  EXPECT_GE(value["days"].get<int>(), 1);
  EXPECT_LE(value["days"].get<int>(), 7);
  // Canonical: properties in schema order, no whitespace.
  EXPECT_EQ(text, value.dump());
  EXPECT_EQ(text.find("\"city\""), 1u);
}

TEST_F(ReplyFormatTest, ChatJsonSchemaHoldsTheReplyToTheSchema) {
  start();
  json r = ok("/v1/chat/completions",
              chat({{"response_format",
                     {{"type", "json_schema"},
                      {"json_schema", {{"name", "plan"}, {"schema", kWeatherSchema}}}}}}));
  expect_weather(r["choices"][0]["message"]["content"].get<std::string>());
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
}

TEST_F(ReplyFormatTest, UnconstrainedTheFakeModelSaysSomethingElse) {
  start();
  // The control: without a format the reply is the script, which is not valid for the schema.
  json r = ok("/v1/chat/completions", chat(json::object()));
  EXPECT_EQ(r["choices"][0]["message"]["content"], kScript);
}

TEST_F(ReplyFormatTest, JsonObjectModeGivesAnObject) {
  start(kObjectScript);
  json r = ok("/v1/chat/completions", chat({{"response_format", {{"type", "json_object"}}}}));
  const std::string text = r["choices"][0]["message"]["content"];
  EXPECT_EQ(text, kObjectScript);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  // A reply that is not an object cannot start: a grammar of numbers gets none of the script.
  json g = ok("/v1/chat/completions", chat({{"grammar", "root ::= [0-9]{1,3}"}}));
  const std::string digits = g["choices"][0]["message"]["content"];
  EXPECT_FALSE(digits.empty());
  EXPECT_EQ(digits.find_first_not_of("0123456789"), std::string::npos) << digits;
}

TEST_F(ReplyFormatTest, StreamedIsTheSameTextAsWhole) {
  start();
  json body = chat({{"response_format",
                     {{"type", "json_schema"}, {"json_schema", {{"schema", kWeatherSchema}}}}}});
  const std::string whole = ok("/v1/chat/completions", body)["choices"][0]["message"]["content"];
  body["stream"] = true;
  auto res = post("/v1/chat/completions", body);
  ASSERT_EQ(res->status, 200);
  std::string streamed;
  size_t at = 0;
  while ((at = res->body.find("data: {", at)) != std::string::npos) {
    const size_t end = res->body.find('\n', at);
    json chunk = json::parse(res->body.substr(at + 6, end - at - 6));
    at = end;
    if (chunk["choices"].empty()) continue;
    const json& delta = chunk["choices"][0]["delta"];
    if (delta.contains("content") && delta["content"].is_string()) streamed += delta["content"];
  }
  EXPECT_EQ(streamed, whole);
}

TEST_F(ReplyFormatTest, CompletionsResponsesAndAnthropicAskTheirOwnWay) {
  start();
  json completion = ok("/v1/completions",
                       {{"prompt", "plan: "},
                        {"max_tokens", 200},
                        {"temperature", 0},
                        {"response_format",
                         {{"type", "json_schema"}, {"json_schema", {{"schema", kWeatherSchema}}}}}});
  expect_weather(completion["choices"][0]["text"].get<std::string>());

  json responses = ok("/v1/responses", {{"input", "weather plan"},
                                        {"max_output_tokens", 200},
                                        {"temperature", 0},
                                        {"text",
                                         {{"format",
                                           {{"type", "json_schema"},
                                            {"name", "plan"},
                                            {"schema", kWeatherSchema},
                                            {"strict", true}}}}}});
  expect_weather(responses["output"][0]["content"][0]["text"].get<std::string>());

  json message = ok("/v1/messages",
                    {{"model", "m"},
                     {"max_tokens", 200},
                     {"temperature", 0},
                     {"messages", {{{"role", "user"}, {"content", "weather plan"}}}},
                     {"output_config", {{"format", {{"type", "json_schema"},
                                                    {"schema", kWeatherSchema}}}}}});
  expect_weather(message["content"][0]["text"].get<std::string>());
}

TEST_F(ReplyFormatTest, GrammarField) {
  start();
  json r = ok("/v1/chat/completions", chat({{"grammar", "root ::= (\"yes\" | \"no\") \"!\""}}));
  const std::string text = r["choices"][0]["message"]["content"];
  EXPECT_TRUE(text == "yes!" || text == "no!") << text;
}

TEST_F(ReplyFormatTest, ErrorsNameTheFieldAndTheReason) {
  start();
  // Strict with a keyword the engine cannot enforce: 400 naming it and its path.
  json strict_schema = {{"type", "object"},
                        {"properties", {{"tags", {{"type", "array"}, {"uniqueItems", true}}}}}};
  auto strict = post("/v1/chat/completions",
                     chat({{"response_format",
                            {{"type", "json_schema"},
                             {"json_schema", {{"schema", strict_schema}, {"strict", true}}}}}}));
  ASSERT_EQ(strict->status, 400) << strict->body;
  EXPECT_NE(strict->body.find("uniqueItems"), std::string::npos) << strict->body;
  EXPECT_NE(strict->body.find("/properties/tags"), std::string::npos) << strict->body;
  // Not a schema; a grammar with a syntax error; both a grammar and a response_format.
  EXPECT_EQ(post("/v1/chat/completions",
                 chat({{"response_format",
                        {{"type", "json_schema"}, {"json_schema", {{"schema", 3}}}}}}))->status,
            400);
  auto bad_grammar = post("/v1/chat/completions", chat({{"grammar", "root ::= ("}}));
  EXPECT_EQ(bad_grammar->status, 400);
  EXPECT_NE(bad_grammar->body.find("grammar"), std::string::npos);
  EXPECT_EQ(post("/v1/chat/completions",
                 chat({{"grammar", "root ::= \"x\""}, {"response_format", {{"type", "json_object"}}}}))
                ->status,
            400);
}

TEST_F(ReplyFormatTest, WithoutStrictAnUnenforceableKeywordIsDroppedAndCounted) {
  start(kObjectScript);
  json schema = {{"type", "object"},
                 {"properties", {{"tags", {{"type", "array"}, {"uniqueItems", true},
                                           {"items", {{"type", "string"}}}}},
                                 {"n", {{"type", "integer"}}}}},
                 {"required", {"tags", "n"}}};
  json r = ok("/v1/chat/completions",
              chat({{"response_format",
                     {{"type", "json_schema"}, {"json_schema", {{"schema", schema}}}}}}));
  const std::string text = r["choices"][0]["message"]["content"];
  ASSERT_EQ(r["choices"][0]["finish_reason"], "stop") << text;
  json value = json::parse(text);
  EXPECT_TRUE(value["tags"].is_array()) << text;
  EXPECT_TRUE(value["n"].is_number_integer()) << text;
  EXPECT_NE(registry_.expose().find("qmlx_schema_keywords_dropped_total{keyword=\"uniqueItems\"} 1"),
            std::string::npos);
}

TEST_F(ReplyFormatTest, LengthIsSaidHonestly) {
  start();
  json r = ok("/v1/chat/completions",
              chat({{"max_tokens", 4},
                    {"response_format",
                     {{"type", "json_schema"}, {"json_schema", {{"schema", kWeatherSchema}}}}}}));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
}

}  // namespace
}  // namespace qmlx::server

namespace qmlx::server {
namespace {

// Tools and a format in one request: the reply is either tool calls or the format's value. The
// fake model opens a call whose arguments break the tool's schema; the tool-call grammar (on
// by default) holds them to it.
TEST_F(ReplyFormatTest, ToolsAndAFormatTogetherGiveAValidCall) {
  start(
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": "
      "\"three\"}}\n</tool_call>");
  const json tools = {{{"type", "function"},
                       {"function", {{"name", "get_weather"}, {"parameters", kWeatherSchema}}}}};
  json r = ok("/v1/chat/completions",
              chat({{"tools", tools},
                    {"parallel_tool_calls", false},
                    {"response_format",
                     {{"type", "json_schema"},
                      {"json_schema", {{"name", "plan"}, {"schema", kWeatherSchema}}}}}}));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls") << r.dump();
  const json& calls = r["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 1u) << r.dump();
  json arguments = json::parse(calls[0]["function"]["arguments"].get<std::string>());
  EXPECT_EQ(arguments["city"], "Paris");
  ASSERT_TRUE(arguments["days"].is_number_integer()) << r.dump();
  EXPECT_GE(arguments["days"].get<int>(), 1);
  EXPECT_LE(arguments["days"].get<int>(), 7);
}

// The request's log line names the format its reply was held to (format=json_schema:<name>,
// server_metrics.cpp): the runner's stats carry the kind and the schema's name when the
// constraint was on, nothing for free text.
TEST(ReplyFormatStatsTest, TheRunnerSaysWhichFormatHeldTheReply) {
  std::shared_ptr<ModelRuntime> runtime = testing::make_fake_runtime({.script = kScript});
  std::unique_ptr<InferenceSession> session = runtime->new_session();
  testing::RecordingHooks hooks;
  ReplyGrammars grammars(runtime->tokenizer, runtime->stop_token_ids);
  auto run = [&](const ReplyFormat& format) {
    GenerationRequest request;
    request.route = Route::kResponses;
    request.max_tokens = 200;
    request.sampling.temperature = 0;
    request.messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "plan"}}});
    request.reply_format = format;
    RenderedPrompt prompt = runtime->render_chat(request.messages, nlohmann::ordered_json::array(),
                                                 true, nlohmann::ordered_json::object());
    auto tables = grammars.bind(format, 1);
    GenerationJob job(1, std::move(request), std::move(prompt), {}, std::move(tables));
    GenerationOutcome outcome = run_generation(job, *session, *runtime, hooks);
    std::string text;
    while (auto event = job.next(std::chrono::seconds(0))) {
      if (event->kind == GenerationEvent::Kind::kOutput) text += event->delta.content;
    }
    return std::make_pair(outcome.stats, text);
  };
  const nlohmann::ordered_json text_format = {
      {"type", "json_schema"}, {"name", "plan"}, {"schema", kWeatherSchema}, {"strict", true}};
  auto [held, held_text] = run(parse_responses_text_format(text_format, "text.format"));
  EXPECT_EQ(held.reply_format, "json_schema");
  EXPECT_EQ(held.reply_format_name, "plan");
  expect_weather(held_text);
  EXPECT_NE(request_log_line(1, FinishReason::kStop, held).find(" format=json_schema:plan"),
            std::string::npos);
  auto [plain, plain_text] = run(ReplyFormat{});
  EXPECT_EQ(plain.reply_format, "");
  EXPECT_EQ(plain_text, kScript);
  EXPECT_EQ(request_log_line(1, FinishReason::kStop, plain).find("format="), std::string::npos);
}

}  // namespace
}  // namespace qmlx::server
