#include "base/growable_bytes.h"

#include <gtest/gtest.h>

#include <cstring>
#include <utility>

#include "base/process.h"

namespace qmlx {
namespace {

void fill(GrowableBytes& b, size_t from, size_t to, uint8_t value) {
  std::memset(b.data() + from, value, to - from);
}

bool all_equal(const GrowableBytes& b, size_t from, size_t to, uint8_t value) {
  for (size_t i = from; i < to; ++i)
    if (b.data()[i] != value) return false;
  return true;
}

TEST(GrowableBytesTest, GrowingKeepsContentAndNewBytesAreZero) {
  GrowableBytes b;
  b.resize(1000);
  fill(b, 0, 1000, 7);
  b.resize(5'000'000);  // past the first mapping: mremap
  EXPECT_TRUE(all_equal(b, 0, 1000, 7));
  EXPECT_TRUE(all_equal(b, 1000, 5'000'000, 0));
  EXPECT_EQ(b.size(), 5'000'000u);
}

TEST(GrowableBytesTest, BytesExposedAgainAfterAShrinkAreZero) {
  GrowableBytes b;
  b.resize(10000);
  fill(b, 0, 10000, 9);
  b.resize(100);
  b.resize(20000);
  EXPECT_TRUE(all_equal(b, 0, 100, 9));
  EXPECT_TRUE(all_equal(b, 100, 20000, 0));
}

TEST(GrowableBytesTest, CopiesAreDeepAndMovesTransfer) {
  GrowableBytes a;
  a.resize(3000);
  fill(a, 0, 3000, 3);
  GrowableBytes copy = a;
  fill(copy, 0, 10, 4);
  EXPECT_TRUE(all_equal(a, 0, 3000, 3));
  EXPECT_EQ(copy.size(), 3000u);
  GrowableBytes moved = std::move(a);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_TRUE(all_equal(moved, 0, 3000, 3));
  copy = std::move(moved);
  EXPECT_TRUE(all_equal(copy, 0, 3000, 3));
}

// The point of the class: capacity that is never written costs no memory, and growing does not
// hold two copies.
TEST(GrowableBytesTest, UnwrittenCapacityIsNotResident) {
  GrowableBytes b;
  const uint64_t before = current_rss_bytes();
  b.resize(size_t(512) << 20);
  fill(b, 0, size_t(8) << 20, 1);
  b.resize(size_t(1) << 30);  // grows the mapping; the written 8 MiB move with it
  EXPECT_TRUE(all_equal(b, (size_t(8) << 20) - 16, size_t(8) << 20, 1));
  EXPECT_LT(current_rss_bytes(), before + (size_t(32) << 20));
}

}  // namespace
}  // namespace qmlx
