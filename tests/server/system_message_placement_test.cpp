#include "server/prompt/system_message_placement.h"

#include <gtest/gtest.h>

namespace qmlx::server {
namespace {

using ojson = nlohmann::ordered_json;

ojson conversation() {
  return ojson::parse(R"([
      {"role": "system", "content": "top"},
      {"role": "system", "content": "more"},
      {"role": "user", "content": "hi"},
      {"role": "system", "content": "# Environment"},
      {"role": "assistant", "content": "hello"}])");
}

TEST(SystemMessagePlacement, LeadingSystemMessagesMergeIntoOne) {
  ojson m = conversation();
  place_system_messages(m, true);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0], ojson({{"role", "system"}, {"content", "top\n\nmore"}}));
  EXPECT_EQ(m[1]["role"], "user");
}

TEST(SystemMessagePlacement, ALaterSystemMessageStaysInPlace) {
  ojson m = conversation();
  place_system_messages(m, true);
  EXPECT_EQ(m[2], ojson({{"role", "system"}, {"content", "# Environment"}}));
  EXPECT_EQ(m[3]["role"], "assistant");
}

TEST(SystemMessagePlacement, ATemplateThatRefusesItGetsAUserMessage) {
  ojson m = conversation();
  place_system_messages(m, false);
  EXPECT_EQ(m[2], ojson({{"role", "user"}, {"content", "# Environment"}}));
}

// What the cache needs: appending a system message (and more) after a conversation leaves the
// placed messages before it unchanged, so the earlier prompt stays a prefix.
TEST(SystemMessagePlacement, EarlierMessagesDoNotDependOnLaterOnes) {
  ojson shorter = ojson::parse(R"([{"role": "system", "content": "top"},
                                    {"role": "user", "content": "hi"}])");
  ojson longer = shorter;
  longer.push_back({{"role", "system"}, {"content", "env"}});
  longer.push_back({{"role", "user"}, {"content", "next"}});
  place_system_messages(shorter, false);
  place_system_messages(longer, false);
  ASSERT_EQ(longer.size(), 4u);
  EXPECT_EQ(longer[0], shorter[0]);
  EXPECT_EQ(longer[1], shorter[1]);
}

TEST(SystemMessagePlacement, NoSystemMessageIsLeftAlone) {
  ojson m = ojson::parse(R"([{"role": "user", "content": "hi", "name": "x"}])");
  ojson before = m;
  place_system_messages(m, false);
  EXPECT_EQ(m, before);
}

}  // namespace
}  // namespace qmlx::server
