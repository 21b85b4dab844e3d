// Request validation across the routes (issue 17 row 13): fields a client may get wrong are a
// 400 naming the field, never accepted and silently changed. `n` other than 1, integers out of
// their field's range (never wrapped into range), a tool_choice that no tool can satisfy, and
// response_format / text.format that this server cannot honour.
#include <gtest/gtest.h>

#include "server/anthropic/anthropic_request.h"
#include "server/chat/chat_request.h"
#include "server/common/request_fields.h"
#include "server/responses/responses_request.h"
#include "tests/server/api_error_of.h"

namespace qmlx::server {
namespace {

using ojson = nlohmann::ordered_json;
using testing::error_of;

const char kUser[] = R"([{"role": "user", "content": "hi"}])";
const char kTools[] = R"([{"type": "function", "function": {"name": "f", "parameters": {}}}])";

ojson chat_body(const std::string& extra) {
  ojson body = ojson::parse(extra);
  body["messages"] = ojson::parse(kUser);
  return body;
}

// The status and named field of parsing `extra` (merged into a valid chat request) on `route`.
ApiError chat_error(const std::string& extra) {
  return error_of([&] { parse_chat_request(chat_body(extra), SamplingDefaults{}); });
}

ApiError completion_error(const std::string& extra) {
  ojson body = ojson::parse(extra);
  body["prompt"] = "hi";
  return error_of([&] { parse_completion_request(body, SamplingDefaults{}); });
}

ApiError messages_error(const std::string& extra) {
  ojson body = ojson::parse(extra);
  body["messages"] = ojson::parse(kUser);
  body["max_tokens"] = 5;
  return error_of([&] { parse_messages_request(body, SamplingDefaults{}); });
}

ApiError responses_error(const std::string& extra) {
  ojson body = ojson::parse(extra);
  body["input"] = "hi";
  return error_of([&] { parse_responses_request(body, SamplingDefaults{}, ResponseStore()); });
}

void expect_400(const ApiError& e, const std::string& param) {
  EXPECT_EQ(e.status(), 400) << e.what();
  EXPECT_EQ(e.param(), param) << e.what();
}

TEST(RequestValidationTest, NOtherThanOneIs400) {
  expect_400(chat_error(R"({"n": 3})"), "n");
  expect_400(chat_error(R"({"n": 0})"), "n");
  expect_400(chat_error(R"({"n": "1"})"), "n");
  expect_400(completion_error(R"({"n": 2})"), "n");
  EXPECT_NO_THROW(parse_chat_request(chat_body(R"({"n": 1})"), SamplingDefaults{}));
}

// nlohmann reads 2^32+5 as an integer; a cast to int made it 5 and 2^31 made top_k negative
// (top-k off). Every integer is checked against its field's range before any narrowing.
TEST(RequestValidationTest, IntegersOutOfRangeAre400NotWrapped) {
  expect_400(chat_error(R"({"top_logprobs": 4294967301})"), "top_logprobs");
  expect_400(chat_error(R"({"top_logprobs": 18446744073709551615})"), "top_logprobs");
  expect_400(chat_error(R"({"top_k": 2147483648})"), "top_k");
  expect_400(chat_error(R"({"top_k": -1})"), "top_k");
  expect_400(chat_error(R"({"max_tokens": 4294967297})"), "max_tokens");
  expect_400(chat_error(R"({"max_completion_tokens": 18446744073709551615})"),
             "max_completion_tokens");
  expect_400(completion_error(R"({"logprobs": 4294967301})"), "logprobs");
  expect_400(completion_error(R"({"max_tokens": 9223372036854775808})"), "max_tokens");
  expect_400(messages_error(R"({"top_k": 4294967296})"), "top_k");
  expect_400(responses_error(R"({"max_output_tokens": 4294967297})"), "max_output_tokens");
  expect_400(chat_error(R"({"seed": 1e30})"), "seed");
  // In range: kept exactly.
  auto r = parse_chat_request(
      chat_body(R"({"top_k": 2147483647, "max_tokens": 2147483647, "top_logprobs": 20,
                    "seed": 18446744073709551615})"),
      SamplingDefaults{});
  EXPECT_EQ(r.sampling.top_k, 2147483647);
  EXPECT_EQ(r.top_logprobs, 20);
  EXPECT_EQ(r.sampling.seed, 18446744073709551615u);
  EXPECT_GE(*r.max_tokens, 1 << 30);
}

TEST(RequestValidationTest, ToolChoiceThatNoToolSatisfiesIs400) {
  expect_400(chat_error(R"({"tool_choice": "required"})"), "tool_choice");
  expect_400(chat_error(R"({"tool_choice": {"type": "function", "function": {"name": "f"}}})"),
             "tool_choice");
  expect_400(chat_error(std::string(R"({"tool_choice": {"type": "function", "function":
                                          {"name": "g"}}, "tools": )") +
                        kTools + "}"),
             "tool_choice");
  expect_400(messages_error(R"({"tool_choice": {"type": "any"}})"), "tool_choice");
  expect_400(messages_error(R"({"tool_choice": {"type": "tool", "name": "f"}})"), "tool_choice");
  expect_400(responses_error(R"({"tool_choice": "required"})"), "tool_choice");
  expect_400(responses_error(R"({"tool_choice": {"type": "function", "name": "f"}})"),
             "tool_choice");
  // With the tool: accepted; auto and none need no tools.
  EXPECT_NO_THROW(parse_chat_request(
      chat_body(std::string(R"({"tool_choice": "required", "tools": )") + kTools + "}"),
      SamplingDefaults{}));
  EXPECT_NO_THROW(parse_chat_request(
      chat_body(std::string(R"({"tool_choice": {"type": "function", "function": {"name": "f"}},
                                "tools": )") +
                kTools + "}"),
      SamplingDefaults{}));
  EXPECT_NO_THROW(parse_chat_request(chat_body(R"({"tool_choice": "none"})"), SamplingDefaults{}));
  EXPECT_NO_THROW(parse_chat_request(chat_body(R"({"tool_choice": "auto"})"), SamplingDefaults{}));
}

// The reply formats each API has: parsed into one ReplyFormat; anything else is a 400 naming
// the field (the constraint itself: reply_format_test.cpp).
TEST(RequestValidationTest, ReplyFormatsAreParsedOrRefused) {
  auto chat = parse_chat_request(chat_body(R"({"response_format": {"type": "json_object"}})"),
                                 SamplingDefaults{});
  EXPECT_EQ(chat.reply_format.kind, ReplyFormat::Kind::kJsonObject);
  chat = parse_chat_request(chat_body(R"({"response_format": {"type": "json_schema", "json_schema":
                                {"name": "x", "strict": true, "schema": {"type": "object"}}}})"),
                            SamplingDefaults{});
  EXPECT_EQ(chat.reply_format.kind, ReplyFormat::Kind::kJsonSchema);
  EXPECT_TRUE(chat.reply_format.strict);
  EXPECT_EQ(chat.reply_format.name, "x");
  EXPECT_EQ(chat.reply_format.schema, ojson::parse(R"({"type": "object"})"));
  expect_400(chat_error(R"({"response_format": {"type": "yaml"}})"), "response_format.type");
  expect_400(chat_error(R"({"response_format": "json"})"), "response_format");
  expect_400(chat_error(R"({"response_format": {"type": "json_schema"}})"),
             "response_format.json_schema");
  expect_400(chat_error(R"({"response_format": {"type": "json_schema", "json_schema":
                            {"schema": {}, "strict": "yes"}}})"),
             "response_format.json_schema.strict");
  expect_400(chat_error(R"({"grammar": "root ::= \"a\"", "response_format": {"type": "json_object"}})"),
             "grammar");
  EXPECT_EQ(parse_chat_request(chat_body(R"({"response_format": {"type": "text"}})"),
                               SamplingDefaults{})
                .reply_format.kind,
            ReplyFormat::Kind::kText);
  auto responses = parse_responses_request(
      ojson::parse(R"({"input": "hi", "text": {"format": {"type": "json_schema", "name": "x",
                       "schema": {"type": "object"}}}})"),
      SamplingDefaults{}, ResponseStore());
  EXPECT_EQ(responses.reply_format.kind, ReplyFormat::Kind::kJsonSchema);
  EXPECT_EQ(responses.reply_format.path, "text.format");
  expect_400(responses_error(R"({"text": {"format": {"type": "json_schema", "name": "x"}}})"),
             "text.format.schema");
  EXPECT_NO_THROW(parse_responses_request(
      ojson::parse(R"({"input": "hi", "text": {"format": {"type": "text"}, "verbosity": "low"}})"),
      SamplingDefaults{}, ResponseStore()));
}

// Fields read with nlohmann's value(key, default) threw type_error (a 500) on a wrong type;
// found by the HTTP mutation test (/tokenize with_pieces: []) and by reading the same pattern.
TEST(RequestValidationTest, MistypedOptionalFieldsAre400NotServerErrors) {
  auto tokenize_error = [](const std::string& body) {
    return error_of([&] { parse_tokenize_request(ojson::parse(body)); });
  };
  expect_400(tokenize_error(R"({"content": "hi", "with_pieces": []})"), "with_pieces");
  expect_400(tokenize_error(R"({"content": "hi", "parse_special": "no"})"), "parse_special");
  expect_400(tokenize_error(R"({"content": 5})"), "content");
  auto ok = parse_tokenize_request(ojson::parse(R"({"content": "hi", "with_pieces": true})"));
  EXPECT_EQ(ok.content, "hi");
  EXPECT_TRUE(ok.with_pieces);
  EXPECT_TRUE(ok.parse_special);
  auto detokenize_error = [](const std::string& body) {
    return error_of([&] { parse_detokenize_request(ojson::parse(body), 100); });
  };
  expect_400(detokenize_error(R"({"tokens": [1, 100]})"), "tokens");
  expect_400(detokenize_error(R"({"tokens": [18446744073709551615]})"), "tokens");
  expect_400(detokenize_error(R"({"tokens": [-1]})"), "tokens");
  expect_400(detokenize_error(R"({"tokens": "1"})"), "tokens");
  EXPECT_EQ(parse_detokenize_request(ojson::parse(R"({"tokens": [0, 99]})"), 100),
            (std::vector<int32_t>{0, 99}));
  expect_400(responses_error(R"({"tools": [{"type": "custom", "name": "p",
                                 "format": {"type": 5}}]})"),
             "tools[0].format.type");
  expect_400(responses_error(R"({"tools": [{"type": "custom", "name": "p",
                                 "format": {"type": "grammar", "syntax": []}}]})"),
             "tools[0].format.syntax");
  expect_400(responses_error(R"({"tool_choice": {"type": "allowed_tools", "mode": 1}})"),
             "tool_choice.mode");
}

}  // namespace
}  // namespace qmlx::server
