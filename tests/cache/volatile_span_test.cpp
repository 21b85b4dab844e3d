// The divergence explainer's likely causes: each kind of volatile span is named when the split
// falls on it, with a fix; ordinary text and spans away from the split get no hint.
#include "cache/volatile_span.h"

#include <gtest/gtest.h>

#include "cache/explain.h"

namespace qmlx {
namespace {

// The kind found when `shared` is followed by `cached_rest` in the cache and `incoming_rest`
// in the prompt ("" when none).
std::string kind(const std::string& shared, const std::string& cached_rest,
                 const std::string& incoming_rest) {
  auto span = find_volatile_span(shared + cached_rest, shared + incoming_rest);
  return span ? span->kind : "";
}

TEST(VolatileSpan, NamesEachKindTheSplitFallsOn) {
  EXPECT_EQ(kind("x-anthropic-billing-header: cc_version=2.1.332.", "0b8; cc_entrypoint=sdk-cli;",
                 "93d; cc_entrypoint=sdk-cli;"),
            "client_header");
  EXPECT_EQ(kind("cc_entrypoint=cli; cch=", "5f1a2;", "0c9d1;"), "client_header");
  EXPECT_EQ(kind("session ", "ae061f84-7037-4edc-9963-bb23961acda7.",
                 "1b0d5e2a-7037-4edc-9963-bb2396100000."),
            "uuid");
  EXPECT_EQ(kind("Today's date: 2026-12-", "01.\n", "02.\n"), "date");
  EXPECT_EQ(kind("Today's date is ", "Tuesday, December 1, 2026", "Wednesday, December 2, 2026"),
            "date");
  EXPECT_EQ(kind("Today is December ", "1, 2026.", "2, 2026."), "date");
  EXPECT_EQ(kind("Last login: 12/0", "1/2026", "2/2026"), "date");
  EXPECT_EQ(kind("The time is 10:4", "1:07 AM", "2:19 AM"), "time");
  EXPECT_EQ(kind("ts=17648", "00000 x", "12345 x"), "unix_time");
  EXPECT_EQ(kind("request req_", "8f3a9c2e01 done", "1b2c3d4e5f done"), "hex_id");
}

TEST(VolatileSpan, EachCauseSaysWhatToChangeOnTheClient) {
  auto span = find_volatile_span("Date: 2026-12-01", "Date: 2026-12-02");
  ASSERT_TRUE(span);
  EXPECT_EQ(span->text, "2026-12-02");  // as the incoming prompt has it
  EXPECT_NE(span->fix.find("client"), std::string::npos);
  auto header = find_volatile_span("x-anthropic-billing-header: cc_version=2.1.332.0b8;",
                                   "x-anthropic-billing-header: cc_version=2.1.332.93d;");
  ASSERT_TRUE(header);
  EXPECT_NE(header->fix.find("CLAUDE_CODE_ATTRIBUTION_HEADER=0"), std::string::npos);
}

TEST(VolatileSpan, NoHintOnOrdinaryText) {
  EXPECT_EQ(kind("<|im_start|>user\n", "say hi<|im_end|>", "list the files here<|im_end|>"), "");
  EXPECT_EQ(kind("{\"name\": \"", "agent\", \"description\"", "edit\", \"description\""), "");
  EXPECT_EQ(kind("version ", "2 of the file", "3 of the file"), "");
  EXPECT_EQ(kind("the ", "deadbeefcafe", "facadeaccede"), "");  // hex letters only: words
  EXPECT_EQ(kind("count ", "12345678", "12345679"), "");        // a number, not a clock
  // A volatile-looking span away from the split is not the cause.
  EXPECT_EQ(kind("Date: 2026-12-01. Now ", "say hi", "say bye"), "");
  EXPECT_EQ(kind("same", "", ""), "");
}

std::string decode_pieces(std::span<const int32_t> ids) {
  static const std::vector<std::string> pieces = {"Today's date: ", "2026-12-", "01", "02",
                                                  "\nsay hi",       "\nsay bye"};
  std::string s;
  for (int32_t id : ids) s += pieces[size_t(id)];
  return s;
}

TEST(FormatDivergence, AppendsTheLikelyCauseOnlyWhenThereIsOne) {
  std::vector<int32_t> cached = {0, 1, 2, 4}, dated = {0, 1, 3, 4}, edited = {0, 1, 2, 5};
  auto on_date = find_divergence(dated, cached, 0, 1);
  ASSERT_TRUE(on_date);
  std::string line = format_divergence(*on_date, decode_pieces);
  EXPECT_NE(line.find(" likely_cause=date span=\"2026-12-02\" fix=\""), std::string::npos) << line;
  auto on_text = find_divergence(edited, cached, 0, 1);
  ASSERT_TRUE(on_text);
  EXPECT_EQ(format_divergence(*on_text, decode_pieces).find("likely_cause"), std::string::npos);
}

}  // namespace
}  // namespace qmlx
