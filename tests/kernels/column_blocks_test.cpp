// gather_column_blocks (kernels/column_blocks.h): each format's rows, decoded, are the original
// rows' chosen column blocks in the chosen order; blocks that would cut a group are refused.
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

// Block j of every row of `after` equals block from[j] of `before`, value for value.
void expect_gathered(const std::vector<float>& before, const std::vector<float>& after, int rows,
                     int cols, int block, const std::vector<int>& from) {
  const size_t out_cols = size_t(block) * from.size();
  ASSERT_EQ(after.size(), size_t(rows) * out_cols);
  size_t differing = 0;
  for (int r = 0; r < rows; ++r)
    for (size_t j = 0; j < from.size(); ++j)
      for (int c = 0; c < block; ++c)
        differing += before[size_t(r) * cols + size_t(from[j]) * block + c] !=
                     after[size_t(r) * out_cols + j * block + c];
  EXPECT_EQ(differing, 0u);
}

const std::vector<int> kFrom = {1, 3, 0, 2};  // four heads, as a tiled out_proj takes them

TEST(ColumnBlocksTest, FloatRowsGatherTheirBlocks) {
  const int rows = 3, block = 5, cols = block * 4;
  std::vector<float> v(size_t(rows) * cols);
  std::mt19937 rng(1);
  for (float& x : v) x = std::uniform_real_distribution<float>(-1, 1)(rng);
  WeightMatrix w;
  w.rows = rows;
  w.cols = cols;
  w.data = reinterpret_cast<const uint8_t*>(v.data());
  const OwnedMatrix moved = gather_column_blocks(w, block, kFrom);
  EXPECT_EQ(moved.view.format, WeightFormat::kF32);
  expect_gathered(v, decoded(moved.view), rows, cols, block, kFrom);
  const OwnedMatrix half = gather_column_blocks(w, 2 * block, {1});  // the MTP fc's second half
  EXPECT_EQ(half.view.cols, 2 * block);
  expect_gathered(v, decoded(half.view), rows, cols, 2 * block, {1});
}

TEST(ColumnBlocksTest, GgufBlocksGatherAsAffineGroups) {
  const int rows = 3, block = 64, cols = block * 4;  // 32-value blocks, two per head
  const std::vector<uint8_t> blocks =
      testing::random_gguf_blocks(GgufType::kQ8_0, size_t(rows) * cols, 2);
  const WeightMatrix w = testing::gguf_view(GgufType::kQ8_0, rows, cols, blocks);
  const OwnedMatrix moved = gather_column_blocks(w, block, kFrom);
  EXPECT_EQ(moved.view.format, WeightFormat::kAffine);
  expect_gathered(decoded(w), decoded(moved.view), rows, cols, block, kFrom);
  const OwnedMatrix tail = gather_column_blocks(w, block, {3});
  expect_gathered(decoded(w), decoded(tail.view), rows, cols, block, {3});
  // An affine matrix gathered back with the inverse permutation is the original's rewrite.
  std::vector<int> back(kFrom.size());
  for (size_t j = 0; j < kFrom.size(); ++j) back[size_t(kFrom[j])] = int(j);
  const OwnedMatrix again = gather_column_blocks(moved.view, block, back);
  EXPECT_EQ(again.data, gguf_to_affine(w).data);
  EXPECT_EQ(again.scales, gguf_to_affine(w).scales);
}

TEST(ColumnBlocksTest, BlocksThatCutAGroupAreRefused) {
  const std::vector<uint8_t> blocks = testing::random_gguf_blocks(GgufType::kQ4_0, 4 * 64, 3);
  const WeightMatrix w = testing::gguf_view(GgufType::kQ4_0, 4, 64, blocks);
  EXPECT_THROW(gather_column_blocks(w, 16, kFrom), Error);  // heads of 16, groups of 32
  EXPECT_THROW(gather_column_blocks(w, 32, {2}), Error);    // a block it does not have
}

}  // namespace
}  // namespace qmlx
