#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/common/api_error.h"
#include "server/routes/auth.h"
#include "server/routes/sse.h"

namespace qmlx::server {
namespace {

using json = nlohmann::json;

TEST(ApiErrorTest, OpenAIShape) {
  json body = json::parse(error_body(ApiStyle::kOpenAI, 400, "bad temperature", "temperature"));
  EXPECT_EQ(body["error"]["message"], "bad temperature");
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(body["error"]["param"], "temperature");
  EXPECT_EQ(body["error"]["code"], 400);
  EXPECT_TRUE(json::parse(error_body(ApiStyle::kOpenAI, 500, "x"))["error"]["param"].is_null());
}

TEST(ApiErrorTest, AnthropicShapeUsesTheRealErrorTypes) {
  json body = json::parse(error_body(ApiStyle::kAnthropic, 404, "no such model"));
  EXPECT_EQ(body["type"], "error");
  EXPECT_EQ(body["error"]["type"], "not_found_error");
  EXPECT_EQ(body["error"]["message"], "no such model");
  EXPECT_EQ(error_type(ApiStyle::kAnthropic, 401), "authentication_error");
  EXPECT_EQ(error_type(ApiStyle::kAnthropic, 400), "invalid_request_error");
  EXPECT_EQ(error_type(ApiStyle::kAnthropic, 413), "request_too_large");
  EXPECT_EQ(error_type(ApiStyle::kAnthropic, 429), "rate_limit_error");
  EXPECT_EQ(error_type(ApiStyle::kAnthropic, 503), "overloaded_error");
}

TEST(AuthTest, AnyNonEmptyKeyWithoutApiKey) {
  EXPECT_FALSE(check_auth({"Bearer abc", ""}, false, ""));
  EXPECT_TRUE(check_auth({"", ""}, false, ""));
  EXPECT_TRUE(check_auth({"Bearer ", ""}, false, ""));
  EXPECT_TRUE(check_auth({"Basic abc", ""}, false, ""));
}

TEST(AuthTest, XApiKeyOnlyOnAnthropicRoutes) {
  EXPECT_FALSE(check_auth({"", "abc"}, true, ""));
  EXPECT_TRUE(check_auth({"", "abc"}, false, ""));
}

TEST(AuthTest, ConfiguredKeyMustMatch) {
  EXPECT_FALSE(check_auth({"Bearer secret", ""}, false, "secret"));
  EXPECT_FALSE(check_auth({"bearer secret", ""}, false, "secret"));
  EXPECT_TRUE(check_auth({"Bearer secreT", ""}, false, "secret"));
  EXPECT_TRUE(check_auth({"Bearer secret2", ""}, false, "secret"));
  EXPECT_FALSE(check_auth({"", "secret"}, true, "secret"));
  EXPECT_TRUE(check_auth({"", "nope"}, true, "secret"));
}

TEST(AuthTest, ConstantTimeEquals) {
  EXPECT_TRUE(constant_time_equals("abc", "abc"));
  EXPECT_FALSE(constant_time_equals("abc", "abd"));
  EXPECT_FALSE(constant_time_equals("abc", "abcd"));
  EXPECT_FALSE(constant_time_equals("", "a"));
  EXPECT_TRUE(constant_time_equals("", ""));
}

TEST(SseTest, Framing) {
  EXPECT_EQ(sse_data(json{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_event("ping", json{{"type", "ping"}}),
            "event: ping\ndata: {\"type\":\"ping\"}\n\n");
  EXPECT_EQ(sse_comment("keep-alive"), ": keep-alive\n\n");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
  // Invalid UTF-8 from a model never breaks the stream.
  EXPECT_EQ(sse_data(json{{"t", std::string("\xff")}}), "data: {\"t\":\"\xEF\xBF\xBD\"}\n\n");
}

}  // namespace
}  // namespace qmlx::server
