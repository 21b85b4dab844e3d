#include <gtest/gtest.h>

#include <vector>

#include "gguf_block_samples.h"
#include "kernels/affine_tiles.h"
#include "kernels/gguf_gemv.h"
#include "kernels/matmul.h"
#include "kernels/weight_matrix.h"
#include "test_util.h"

namespace qmlx {
namespace {

using testing::random_gguf_blocks;
using testing::random_vector;
using testing::relative_error;

constexpr GgufType kAllTypes[] = {
    GgufType::kF32,  GgufType::kF16,  GgufType::kBF16, GgufType::kQ8_0, GgufType::kQ4_0,
    GgufType::kQ4_1, GgufType::kQ5_0, GgufType::kQ5_1, GgufType::kQ2_K, GgufType::kQ3_K,
    GgufType::kQ4_K, GgufType::kQ5_K, GgufType::kQ6_K};

using testing::gguf_view;

class GgufMatmulTest : public ::testing::TestWithParam<GgufType> {};

TEST_P(GgufMatmulTest, GeometryMatchesGgmlBlockSizes) {
  const GgufType t = GetParam();
  const int cols = 512;
  auto bytes = random_gguf_blocks(t, size_t(3) * cols, 1);
  WeightMatrix m = gguf_view(t, 3, cols, bytes);
  EXPECT_EQ(m.row_bytes() * 3, bytes.size());
  EXPECT_EQ(m.bytes(), bytes.size());
  // A row slice decodes to the same values as the rows of the whole matrix.
  std::vector<float> all(size_t(3) * cols), tail(size_t(2) * cols);
  dequantize_rows(m, 0, 3, all.data());
  dequantize_rows(m.row_slice(1, 3), 0, 2, tail.data());
  EXPECT_EQ(std::vector<float>(all.begin() + cols, all.end()), tail);
}

// Matmul over stored blocks equals the double-precision product with the decoded matrix.
TEST_P(GgufMatmulTest, MatmulMatchesDecodedProduct) {
  const GgufType t = GetParam();
  const int rows = 23, cols = 768;
  auto bytes = random_gguf_blocks(t, size_t(rows) * cols, 2);
  const WeightMatrix stored = gguf_view(t, rows, cols, bytes);
  std::vector<float> w(size_t(rows) * cols);
  dequantize_rows(stored, 0, rows, w.data());
  // Q8_0 also as models load it: tiled as 8-bit affine (kernels/affine_tiles.h).
  AffineTileStorage storage;
  std::vector<WeightMatrix> layouts{stored};
  if (q8_0_tiles_supported(stored)) layouts.push_back(tile_q8_0_matrix(stored, storage));
  for (const WeightMatrix& m : layouts)
    for (int T : {1, 3, 8}) {
      SCOPED_TRACE(m.tiled ? "tiled" : "stored");
      auto x = random_vector(size_t(T) * cols, 5 + T);
      std::vector<double> expected(size_t(T) * rows);
      for (int s = 0; s < T; ++s)
        for (int r = 0; r < rows; ++r) {
          double acc = 0;
          for (int c = 0; c < cols; ++c)
            acc += double(x[size_t(s) * cols + c]) * w[size_t(r) * cols + c];
          expected[size_t(s) * rows + r] = acc;
        }
      std::vector<float> y(size_t(T) * rows);
      matmul(x.data(), T, m, y.data(), T == 1 ? 1 : 0);  // one row: a decode step
      // The fused decode kernels round x to int16 per 32 columns (~2^-16 relative).
      const bool rounded_x = T == 1 && (m.tiled || gguf_gemv_supported(t));
      EXPECT_LT(relative_error(y, expected), rounded_x ? 1e-4 : 1e-5)
          << gguf_type_name(t) << " T=" << T;
      if (rounded_x) {
        // ... and are then exact: the product with that rounded x.
        auto xr = testing::round_to_int16_groups(x, 32);
        for (int r = 0; r < rows; ++r) {
          double acc = 0;
          for (int c = 0; c < cols; ++c) acc += double(xr[c]) * w[size_t(r) * cols + c];
          expected[r] = acc;
        }
        EXPECT_LT(relative_error(y, expected), 2e-6) << gguf_type_name(t);
      }
    }
}

// gguf_dequantize (AVX2 decoders for Q8_0, Q4_K, Q6_K) gives the scalar definition's values.
TEST_P(GgufMatmulTest, FastDecodersEqualTheScalarDefinition) {
  const GgufType t = GetParam();
  const size_t n = 4096;
  auto bytes = random_gguf_blocks(t, n, 9);
  std::vector<float> fast(n), scalar(n);
  gguf_dequantize(t, bytes.data(), n, fast.data());
  gguf_dequantize_scalar(t, bytes.data(), n, scalar.data());
  EXPECT_LE(relative_error(fast, scalar), 1e-7) << gguf_type_name(t);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GgufMatmulTest, ::testing::ValuesIn(kAllTypes),
                         [](const auto& info) { return std::string(gguf_type_name(info.param)); });

TEST(GgufTypesTest, IdsAndNamesAreGgmls) {
  EXPECT_EQ(uint32_t(GgufType::kQ8_0), 8u);
  EXPECT_EQ(uint32_t(GgufType::kQ4_K), 12u);
  EXPECT_EQ(uint32_t(GgufType::kBF16), 30u);
  EXPECT_EQ(gguf_type_from_name("q6_k"), GgufType::kQ6_K);
  EXPECT_EQ(gguf_type_from_name("iq2_xs"), std::nullopt);
  EXPECT_EQ(gguf_type_from_id(16), std::nullopt);
  EXPECT_EQ(gguf_type_id_name(16), "IQ2_XXS");
  EXPECT_EQ(gguf_type_id_name(14), "Q6_K");
  EXPECT_EQ(gguf_type_id_name(200), "type 200");
  EXPECT_EQ(gguf_block_bytes(GgufType::kQ2_K), 84u);
  EXPECT_EQ(gguf_block_bytes(GgufType::kQ3_K), 110u);
  EXPECT_EQ(gguf_block_bytes(GgufType::kQ5_K), 176u);
  EXPECT_EQ(gguf_block_bytes(GgufType::kQ6_K), 210u);
}

}  // namespace
}  // namespace qmlx
