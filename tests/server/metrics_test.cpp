#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "server/metrics/metrics.h"
#include "server/metrics/server_metrics.h"

namespace qmlx::server {
namespace {

// Counts "# TYPE <name>" lines per family name.
std::map<std::string, int> type_lines(const std::string& text) {
  std::map<std::string, int> counts;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) ++counts[line.substr(7, line.find(' ', 7) - 7)];
  }
  return counts;
}

TEST(MetricsTest, CounterWithLabelsIsExposedWithHelpAndType) {
  MetricsRegistry registry;
  auto& c = registry.counter("x_total", "Things", {"route", "status"});
  c.add(2, {"/a", "200"});
  c.add(1, {"/a", "200"});
  c.add(1, {"/b", "404"});
  std::string text = registry.expose();
  EXPECT_NE(text.find("# HELP x_total Things\n# TYPE x_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("x_total{route=\"/a\",status=\"200\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("x_total{route=\"/b\",status=\"404\"} 1\n"), std::string::npos);
}

TEST(MetricsTest, HistogramBucketsAreCumulative) {
  MetricsRegistry registry;
  auto& h = registry.histogram("lat_seconds", "Latency", {0.1, 1, 10});
  h.observe(0.0625);
  h.observe(0.5);
  h.observe(5);
  h.observe(50);
  std::string text = registry.expose();
  EXPECT_NE(text.find("lat_seconds_bucket{le=\"0.1\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_seconds_bucket{le=\"1\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("lat_seconds_bucket{le=\"10\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("lat_seconds_bucket{le=\"+Inf\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("lat_seconds_sum 55.5625\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_seconds_count 4\n"), std::string::npos);
}

TEST(MetricsTest, RegisteringAgainReturnsTheSameFamily) {
  MetricsRegistry registry;
  auto& a = registry.counter("c_total", "C");
  auto& b = registry.counter("c_total", "C");
  EXPECT_EQ(&a, &b);
  EXPECT_THROW(registry.gauge("c_total", "C"), std::logic_error);
  EXPECT_EQ(type_lines(registry.expose())["c_total"], 1);
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  MetricsRegistry registry;
  registry.counter("e_total", "E", {"v"}).add(1, {"a\"b\\c\nd"});
  EXPECT_NE(registry.expose().find("e_total{v=\"a\\\"b\\\\c\\nd\"} 1"), std::string::npos);
}

TEST(MetricsTest, ServerFamiliesAppearExactlyOnce) {
  MetricsRegistry registry;
  ServerMetrics metrics(registry);
  ServerMetrics again(registry);  // a second owner must not duplicate families
  metrics.record_request("/v1/chat/completions", 200);
  GenerationStats stats;
  stats.prompt_tokens = 10;
  stats.prefill_tokens = 10;
  stats.completion_tokens = 5;
  stats.prefill_ms = 100;
  stats.decode_ms = 100;
  stats.ttft_ms = 120;
  metrics.record_generation(stats);
  auto counts = type_lines(registry.expose());
  for (const char* name :
       {"qmlx_requests_total", "qmlx_requests_in_flight", "qmlx_prompt_tokens_total",
        "qmlx_prefill_tokens_total", "qmlx_completion_tokens_total", "qmlx_ttft_seconds",
        "qmlx_prefill_tokens_per_second", "qmlx_decode_tokens_per_second",
        "process_resident_memory_bytes"}) {
    EXPECT_EQ(counts[name], 1) << name;
  }
  std::string text = registry.expose();
  EXPECT_NE(text.find("qmlx_prompt_tokens_total 10\n"), std::string::npos);
  EXPECT_NE(text.find("qmlx_decode_tokens_per_second_sum 40\n"), std::string::npos) << text;
}

TEST(MetricsTest, RequestLogLineStartsWithTheCacheFields) {
  GenerationStats stats;
  stats.prompt_tokens = 7;
  stats.prefill_tokens = 7;
  EXPECT_EQ(
      request_log_line(12, FinishReason::kStop, stats).rfind("uid=12 MISS cached=0 prefill=7 ", 0),
      0u);
  stats.cached_tokens = 5;
  stats.prefill_tokens = 2;
  EXPECT_EQ(
      request_log_line(13, FinishReason::kLength, stats).rfind("uid=13 HIT cached=5 prefill=2 ", 0),
      0u);
}

TEST(MetricsTest, RequestLogLineEndsWithTheNormalizationRulesThatFired) {
  GenerationStats stats;
  std::string line = request_log_line(1, FinishReason::kStop, stats);
  EXPECT_EQ(line.find("normalized="), std::string::npos) << line;
  stats.normalized = {"strip_claude_code_billing_header", "canonical_tool_order"};
  line = request_log_line(1, FinishReason::kStop, stats);
  const std::string tail = " normalized=strip_claude_code_billing_header,canonical_tool_order";
  ASSERT_GE(line.size(), tail.size());
  EXPECT_EQ(line.substr(line.size() - tail.size()), tail) << line;
}

TEST(MetricsTest, RequestLogLineNamesTheReplyFormatItWasHeldTo) {
  GenerationStats stats;
  std::string line = request_log_line(1, FinishReason::kStop, stats);
  EXPECT_EQ(line.find("format="), std::string::npos) << line;
  stats.reply_format = "json_object";
  line = request_log_line(1, FinishReason::kStop, stats);
  EXPECT_NE(line.find(" format=json_object"), std::string::npos) << line;
  EXPECT_EQ(line.find(" format=json_object:"), std::string::npos) << line;
  // The client's schema name, one token: other characters become '_', at most 64 kept.
  stats.reply_format = "json_schema";
  stats.reply_format_name = "codex_output_schema";
  line = request_log_line(1, FinishReason::kStop, stats);
  EXPECT_NE(line.find(" format=json_schema:codex_output_schema"), std::string::npos) << line;
  stats.reply_format_name = "my schema=\"x\"\n" + std::string(100, 'a');
  line = request_log_line(1, FinishReason::kStop, stats);
  const std::string tail = " format=json_schema:my_schema__x__" + std::string(50, 'a');
  ASSERT_GE(line.size(), tail.size());
  EXPECT_EQ(line.substr(line.size() - tail.size()), tail) << line;
}

}  // namespace
}  // namespace qmlx::server
