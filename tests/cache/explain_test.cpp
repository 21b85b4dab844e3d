#include "cache/explain.h"

#include <gtest/gtest.h>

#include "cache_fixture.h"

namespace qmlx {
namespace {

using test::concat;
using test::make_tokens;

std::string decode(std::span<const int32_t> ids) {
  std::string s;
  for (int32_t id : ids) s += "<" + std::to_string(id) + ">";
  return s;
}

TEST(FindDivergence, ReportsTheSplitWithContextOnBothSides) {
  std::vector<int32_t> cached = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<int32_t> prompt = {1, 2, 3, 4, 9, 9, 9};
  auto d = find_divergence(prompt, cached, /*restored=*/0, /*min_shared=*/4, /*context=*/2);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->position, 4);
  EXPECT_EQ(d->before, (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(d->cached_after, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(d->incoming_after, (std::vector<int32_t>{9, 9}));
  EXPECT_FALSE(find_divergence(prompt, cached, 0, 5));  // shares too little to matter
  EXPECT_FALSE(find_divergence(prompt, cached, 4, 1));  // restored everything it shares
  d->snapshot_kind = SnapshotKind::kMessageBoundary;
  EXPECT_EQ(format_divergence(*d, decode),
            "divergence pos=4 restored=0 snapshot=" + Hash128{}.hex() +
                " kind=message_boundary before=\"<3><4>\" cached=\"<5><6>\" incoming=\"<9><9>\"");
}

class Explain : public test::CacheTest {};

// Silent failure (1) of issue 5: a per-turn id early in the system prompt.
TEST_F(Explain, PerTurnIdInTheSystemPromptIsAMissThatNamesThePosition) {
  std::vector<int32_t> system = make_tokens(71, 120);
  std::vector<int32_t> turn1 = concat(system, make_tokens(72, 60));
  auto cache = open();
  capture(*cache, turn1, SnapshotKind::kMessageBoundary);
  std::vector<int32_t> turn2 = concat(turn1, make_tokens(73, 30));
  turn2[7] = 424242;  // the request id changed
  RestoreResult r = restore_and_check(*cache, turn2);
  EXPECT_FALSE(r.hit);
  ASSERT_TRUE(r.divergence);
  EXPECT_EQ(r.divergence->position, 7);
  EXPECT_EQ(r.divergence->cached_after.front(), turn1[7]);
  EXPECT_EQ(r.divergence->incoming_after.front(), 424242);
  EXPECT_EQ(r.divergence->snapshot_tokens, int64_t(turn1.size()));
  std::string line = format_divergence(*r.divergence, decode);
  EXPECT_NE(line.find("pos=7 "), std::string::npos);
  EXPECT_NE(line.find("incoming=\"<424242>"), std::string::npos);
}

TEST_F(Explain, QuietWhenEverythingSharedWasRestored) {
  std::vector<int32_t> turn1 = make_tokens(74, 100);
  auto cache = open();
  capture(*cache, turn1, SnapshotKind::kMessageBoundary);
  RestoreResult r = restore_and_check(*cache, concat(turn1, make_tokens(75, 100)));
  EXPECT_TRUE(r.hit);
  EXPECT_FALSE(r.divergence);
  EXPECT_FALSE(restore_and_check(*cache, make_tokens(76, 100)).divergence);
}

}  // namespace
}  // namespace qmlx
