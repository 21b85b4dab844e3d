#include "cache/memory_tier.h"

#include <gtest/gtest.h>

namespace qmlx {
namespace {

SharedBytes bytes(size_t n) { return std::make_shared<const std::vector<uint8_t>>(n, 7); }

TEST(MemoryTier, EvictsLeastRecentlyUsedWithinItsByteBound) {
  MemoryTier tier(100);
  EXPECT_TRUE(tier.put("a", bytes(40)).empty());
  EXPECT_TRUE(tier.put("b", bytes(40)).empty());
  ASSERT_TRUE(tier.get("a"));  // a is now the most recent
  EXPECT_EQ(tier.put("c", bytes(40)), std::vector<std::string>{"b"});
  EXPECT_TRUE(tier.contains("a"));
  EXPECT_FALSE(tier.get("b"));
  EXPECT_EQ(tier.bytes(), 80u);
  EXPECT_EQ(tier.put("huge", bytes(101)), std::vector<std::string>{"huge"});
  EXPECT_EQ(tier.entries(), 2u);
  tier.put("a", bytes(10));  // replacing updates the size
  EXPECT_EQ(tier.bytes(), 50u);
  tier.remove("a");
  tier.clear();
  EXPECT_EQ(tier.bytes(), 0u);
}

}  // namespace
}  // namespace qmlx
