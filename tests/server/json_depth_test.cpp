// Deeply nested JSON (issue 17 row 1): every place that parses request JSON refuses nesting
// beyond kMaxJsonDepth with a 400 that names the limit, instead of overflowing the stack in
// a recursive copy, dump or template conversion.
#include <gtest/gtest.h>

#include "base/json_depth.h"
#include "server/chat/chat_request.h"
#include "server/common/request_fields.h"
#include "tests/server/api_error_of.h"

namespace qmlx::server {
namespace {

using ojson = nlohmann::ordered_json;
using testing::error_of;

std::string nested_array(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

std::string limit_text() { return std::to_string(kMaxJsonDepth); }

TEST(JsonDepthTest, DepthCountsArraysAndObjectsOutsideStrings) {
  EXPECT_EQ(json_nesting_depth(""), 0u);
  EXPECT_EQ(json_nesting_depth("1"), 0u);
  EXPECT_EQ(json_nesting_depth("[]"), 1u);
  EXPECT_EQ(json_nesting_depth(R"({"a": [{"b": [1]}], "c": {}})"), 4u);
  EXPECT_EQ(json_nesting_depth(R"(["[[[[", "\"[[[", {"k\\": "{{{"}])"), 2u);
  EXPECT_EQ(json_nesting_depth(nested_array(60000)), 60000u);
}

TEST(JsonDepthTest, BoundedParseDiscardsTooDeepText) {
  EXPECT_TRUE(parse_json_bounded<ojson>(nested_array(60000)).is_discarded());
  EXPECT_TRUE(parse_json_bounded<ojson>("[1,").is_discarded());
  EXPECT_EQ(parse_json_bounded<ojson>(nested_array(kMaxJsonDepth)).size(), 1u);
}

TEST(JsonDepthTest, DeepBodyIs400NamingTheLimit) {
  std::string body = R"({"messages":[{"role":"user","content":)" + nested_array(60000) + "}]}";
  auto e = error_of([&] { parse_body(body); });
  EXPECT_EQ(e.status(), 400);
  EXPECT_NE(std::string(e.what()).find(limit_text()), std::string::npos) << e.what();
  // Exactly at the limit (the body object counts as one level) still parses.
  std::string at_limit = R"({"a":)" + nested_array(kMaxJsonDepth - 1) + "}";
  EXPECT_NO_THROW(parse_body(at_limit));
  std::string over = R"({"a":)" + nested_array(kMaxJsonDepth) + "}";
  EXPECT_EQ(error_of([&] { parse_body(over); }).status(), 400);
}

TEST(JsonDepthTest, DeepToolCallArgumentsStringIs400) {
  ojson body = {{"messages",
                 {{{"role", "assistant"},
                   {"content", ""},
                   {"tool_calls",
                    {{{"id", "c1"},
                      {"type", "function"},
                      {"function", {{"name", "f"}, {"arguments", nested_array(60000)}}}}}}}}}};
  auto e = error_of([&] { parse_chat_request(body, SamplingDefaults{}); });
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "messages[0].tool_calls[0].function.arguments");
  EXPECT_NE(std::string(e.what()).find(limit_text()), std::string::npos) << e.what();
}

}  // namespace
}  // namespace qmlx::server
