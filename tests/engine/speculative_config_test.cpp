// The --speculative and --speculative-config values: what each accepts, and that anything else
// is an error naming the flag.
#include "engine/speculative_config.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "base/error.h"

namespace qmlx {
namespace {

TEST(SpeculativeConfigTest, FlagTakesMtpWithAnOptionalDraftCount) {
  EXPECT_EQ(parse_speculative_flag("mtp"), 1);
  EXPECT_EQ(parse_speculative_flag("mtp:1"), 1);
  EXPECT_EQ(parse_speculative_flag("mtp:3"), 3);
  EXPECT_EQ(parse_speculative_flag("mtp:4"), 4);
  EXPECT_EQ(parse_speculative_flag("off"), 0);
  for (const char* bad : {"", "mtp:", "mtp:0", "mtp:5", "mtp:-1", "mtp:2x", "eagle", "MTP", "mtp2"})
    EXPECT_THROW(parse_speculative_flag(bad), Error) << bad;
  try {
    parse_speculative_flag("ngram");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--speculative must be mtp"), std::string::npos);
  }
}

TEST(SpeculativeConfigTest, ConfigTakesQmlxsJson) {
  EXPECT_EQ(parse_speculative_config(R"({"method":"mtp","num_speculative_tokens":2})"), 2);
  EXPECT_EQ(parse_speculative_config(R"({"method":"mtp"})"), 1);
  for (const char* bad :
       {"", "[]", "{", R"({"num_speculative_tokens":2})", R"({"method":"ngram"})",
        R"({"method":"mtp","num_speculative_tokens":0})",
        R"({"method":"mtp","num_speculative_tokens":9})",
        R"({"method":"mtp","num_speculative_tokens":"2"})", R"({"method":"mtp","model":"draft"})"})
    EXPECT_THROW(parse_speculative_config(bad), Error) << bad;
}

TEST(SpeculativeConfigTest, RejectHookReadsAProbability) {
  unsetenv("QMLX_SPECULATIVE_REJECT");
  EXPECT_EQ(speculative_reject_probability_from_env(), 0.0);
  setenv("QMLX_SPECULATIVE_REJECT", "0.25", 1);
  EXPECT_EQ(speculative_reject_probability_from_env(), 0.25);
  for (const char* bad : {"1.5", "-0.1", "x", "0.5x"}) {
    setenv("QMLX_SPECULATIVE_REJECT", bad, 1);
    EXPECT_THROW(speculative_reject_probability_from_env(), Error) << bad;
  }
  unsetenv("QMLX_SPECULATIVE_REJECT");
}

}  // namespace
}  // namespace qmlx
