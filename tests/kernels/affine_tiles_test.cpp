// The 16-row tile layout of kernels/affine_tiles.h: a tiled matrix dequantizes to exactly the
// floats of the stored one (whole rows, single rows, column ranges), for every shape the layout
// takes, partial last tiles and rows whose length is not a whole number of 16-step transposes.
// The GEMV over tiles is checked in matmul_test (against float64) and row_kind_invariance_test.
#include "kernels/affine_tiles.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gguf_block_samples.h"
#include "test_util.h"
#include "tiny_model.h"

namespace qmlx {
namespace {

struct Stored {
  testing::QuantizedBlobs q;
  WeightMatrix m;
};

Stored stored(int rows, int cols, int bits, int gs) {
  Stored s{testing::quantize_affine(testing::random_vector(size_t(rows) * cols, rows + cols), {},
                                    rows, cols, bits, gs),
           {}};
  s.m.format = WeightFormat::kAffine;
  s.m.rows = rows;
  s.m.cols = cols;
  s.m.bits = bits;
  s.m.group_size = gs;
  s.m.scale_type = ScalarType::kBF16;
  s.m.data = s.q.weight.bytes.data();
  s.m.scales = s.q.scales.bytes.data();
  s.m.biases = s.q.biases.bytes.data();
  return s;
}

TEST(AffineTilesTest, DequantizesToTheStoredFloats) {
  struct Shape {
    int rows, cols, bits, gs;
  };
  // 4-bit rows of 96 columns are 24 steps: one 16-step transpose and 8 steps one by one.
  for (Shape sh : {Shape{1, 64, 8, 32},
                   {16, 128, 8, 64},
                   {17, 256, 8, 128},
                   {37, 96, 4, 32},
                   {40, 640, 4, 64},
                   {33, 384, 4, 128},
                   {5, 32, 4, 32}}) {
    SCOPED_TRACE(std::to_string(sh.rows) + "x" + std::to_string(sh.cols) + " " +
                 std::to_string(sh.bits) + "-bit gs " + std::to_string(sh.gs));
    const Stored s = stored(sh.rows, sh.cols, sh.bits, sh.gs);
    ASSERT_TRUE(affine_tiles_supported(s.m));
    AffineTileStorage storage;
    const WeightMatrix t = tile_affine_matrix(s.m, storage);
    EXPECT_TRUE(t.tiled);
    EXPECT_FALSE(affine_tiles_supported(t)) << "a tiled matrix is not tiled again";
    std::vector<float> expected(size_t(sh.rows) * sh.cols), got(expected.size());
    dequantize_rows(s.m, 0, sh.rows, expected.data());
    dequantize_rows(t, 0, sh.rows, got.data());
    EXPECT_EQ(got, expected);
    // Every single row, and a window of rows across a tile boundary.
    for (int r = 0; r < sh.rows; ++r) {
      std::vector<float> row(sh.cols);
      dequantize_rows(t, r, r + 1, row.data());
      ASSERT_TRUE(std::equal(row.begin(), row.end(), expected.begin() + size_t(r) * sh.cols))
          << "row " << r;
      dequantize_row_range(t, r, sh.gs, sh.cols, row.data());
      ASSERT_TRUE(std::equal(row.begin(), row.begin() + (sh.cols - sh.gs),
                             expected.begin() + size_t(r) * sh.cols + sh.gs))
          << "columns from " << sh.gs << " of row " << r;
    }
    if (sh.rows > 20) {
      std::vector<float> window(size_t(12) * sh.cols);
      dequantize_rows(t, 9, 21, window.data());
      EXPECT_TRUE(std::equal(window.begin(), window.end(), expected.begin() + size_t(9) * sh.cols));
    }
  }
}

// A GGUF Q8_0 matrix becomes the tiled 8-bit affine matrix of the same values (codes + 128,
// bias -128 d), dequantizing to exactly GGUF's floats; a scale too large for that stays as it is.
TEST(AffineTilesTest, Q8_0MatricesAreTiledAsAffineWithTheSameValues) {
  for (auto [rows, cols] : {std::pair{37, 96}, {16, 512}, {3, 32}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
    std::vector<uint8_t> blocks =
        testing::random_gguf_blocks(GgufType::kQ8_0, size_t(rows) * cols, rows);
    const WeightMatrix q = testing::gguf_view(GgufType::kQ8_0, rows, cols, blocks);
    ASSERT_TRUE(q8_0_tiles_supported(q));
    AffineTileStorage storage;
    const WeightMatrix t = tile_q8_0_matrix(q, storage);
    ASSERT_TRUE(t.tiled);
    EXPECT_EQ(t.format, WeightFormat::kAffine);
    std::vector<float> expected(size_t(rows) * cols), got(expected.size());
    dequantize_rows(q, 0, rows, expected.data());
    dequantize_rows(t, 0, rows, got.data());
    EXPECT_EQ(got, expected);
    // One block's scale at 600: -128 d overflows f16, so the matrix is left as GGUF.
    const uint16_t big = float_to_f16(600.f);
    std::memcpy(blocks.data() + gguf_bytes(GgufType::kQ8_0, cols) + 34, &big, 2);
    AffineTileStorage unused;
    EXPECT_FALSE(tile_q8_0_matrix(q, unused).tiled);
  }
}

TEST(AffineTilesTest, OnlyFourAndEightBitGroupsOf32To128AreTiled) {
  for (int bits : {2, 3, 5, 6}) EXPECT_FALSE(affine_tiles_supported(stored(16, 128, bits, 64).m));
  WeightMatrix f32;
  f32.rows = f32.cols = 16;
  EXPECT_FALSE(affine_tiles_supported(f32));
}

}  // namespace
}  // namespace qmlx
