// move_column_blocks (kernels/column_blocks.h): each format's rows, decoded, are the original
// rows with their column blocks moved; blocks that would cut a group are refused.
#include "kernels/column_blocks.h"

#include <gtest/gtest.h>

#include <random>

#include "base/error.h"
#include "gguf_block_samples.h"

namespace qmlx {
namespace {

std::vector<float> decoded(const WeightMatrix& w) {
  std::vector<float> out(size_t(w.rows) * w.cols);
  dequantize_rows(w, 0, w.rows, out.data());
  return out;
}

// Rows of `before` with block i moved to block to[i] equal `after`, value for value.
void expect_moved(const std::vector<float>& before, const std::vector<float>& after, int rows,
                  int cols, int block, const std::vector<int>& to) {
  size_t differing = 0;
  for (int r = 0; r < rows; ++r)
    for (size_t i = 0; i < to.size(); ++i)
      for (int j = 0; j < block; ++j)
        differing += before[size_t(r) * cols + i * block + j] !=
                     after[size_t(r) * cols + size_t(to[i]) * block + j];
  EXPECT_EQ(differing, 0u);
}

const std::vector<int> kTo = {2, 0, 3, 1};  // four heads, as a tiled out_proj moves them

TEST(ColumnBlocksTest, FloatRowsMoveTheirBlocks) {
  const int rows = 3, block = 5, cols = block * 4;
  std::vector<float> v(size_t(rows) * cols);
  std::mt19937 rng(1);
  for (float& x : v) x = std::uniform_real_distribution<float>(-1, 1)(rng);
  WeightMatrix w;
  w.rows = rows;
  w.cols = cols;
  w.data = reinterpret_cast<const uint8_t*>(v.data());
  const OwnedMatrix moved = move_column_blocks(w, block, kTo);
  EXPECT_EQ(moved.view.format, WeightFormat::kF32);
  expect_moved(v, decoded(moved.view), rows, cols, block, kTo);
}

TEST(ColumnBlocksTest, GgufBlocksMoveAsAffineGroups) {
  const int rows = 3, block = 64, cols = block * 4;  // 32-value blocks, two per head
  const std::vector<uint8_t> blocks =
      testing::random_gguf_blocks(GgufType::kQ8_0, size_t(rows) * cols, 2);
  WeightMatrix w;
  w.format = WeightFormat::kGguf;
  w.gguf_type = GgufType::kQ8_0;
  w.rows = rows;
  w.cols = cols;
  w.data = blocks.data();
  const OwnedMatrix moved = move_column_blocks(w, block, kTo);
  EXPECT_EQ(moved.view.format, WeightFormat::kAffine);
  expect_moved(decoded(w), decoded(moved.view), rows, cols, block, kTo);
  // An affine matrix moved back with the inverse permutation is the original's rewrite.
  std::vector<int> back(kTo.size());
  for (size_t i = 0; i < kTo.size(); ++i) back[size_t(kTo[i])] = int(i);
  const OwnedMatrix again = move_column_blocks(moved.view, block, back);
  EXPECT_EQ(again.data, gguf_to_affine(w).data);
  EXPECT_EQ(again.scales, gguf_to_affine(w).scales);
}

TEST(ColumnBlocksTest, BlocksThatCutAGroupAreRefused) {
  const std::vector<uint8_t> blocks = testing::random_gguf_blocks(GgufType::kQ4_0, 4 * 64, 3);
  WeightMatrix w;
  w.format = WeightFormat::kGguf;
  w.gguf_type = GgufType::kQ4_0;
  w.rows = 4;
  w.cols = 64;
  w.data = blocks.data();
  EXPECT_THROW(move_column_blocks(w, 16, kTo), Error);           // heads of 16, groups of 32
  EXPECT_THROW(move_column_blocks(w, 16, {0, 1, 1, 2}), Error);  // not a permutation
}

}  // namespace
}  // namespace qmlx
