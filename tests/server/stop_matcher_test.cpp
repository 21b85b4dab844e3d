#include <gtest/gtest.h>

#include "server/scheduling/stop_matcher.h"

namespace qmlx::server {
namespace {

// Feeds `pieces` and returns everything emitted.
std::string run(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += m.push(p);
  return out + m.finish();
}

TEST(StopMatcherTest, StopsAtTheFirstStopStringAcrossPieces) {
  StopMatcher m({"END", "xyz"});
  EXPECT_EQ(run(m, {"hello E", "N", "D and more"}), "hello ");
  EXPECT_EQ(m.matched(), "END");
}

TEST(StopMatcherTest, HoldsBackAPossiblePrefixOnly) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.push("abcE"), "abc");
  EXPECT_EQ(m.push("x"), "Ex");
  EXPECT_FALSE(m.matched());
  EXPECT_EQ(m.push("EN"), "");
  EXPECT_EQ(m.finish(), "EN");
}

TEST(StopMatcherTest, EarliestMatchWins) {
  StopMatcher m({"bc", "abcd"});
  EXPECT_EQ(run(m, {"xabcd"}), "x");
  EXPECT_EQ(m.matched(), "abcd");
}

TEST(StopMatcherTest, NoStopsPassesEverything) {
  StopMatcher m({});
  EXPECT_EQ(m.push("anything"), "anything");
  EXPECT_EQ(m.finish(), "");
}

}  // namespace
}  // namespace qmlx::server
