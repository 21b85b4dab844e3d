#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include "kernels/affine_tiles.h"
#include "test_util.h"
#include "tiny_model.h"

namespace qmlx {
namespace {

using testing::random_vector;
using testing::relative_error;

// The generated rows of a call of T rows here: a single row is a decode step (the int16 GEMV),
// several are a prefill (the fp32 panel GEMM); each path is checked against its own bound.
int decode_rows(int T) { return T == 1 ? 1 : 0; }

// y[t][o] = sum_i x[t][i] * w[o][i] in double.
std::vector<double> naive_matmul(const std::vector<float>& x, int T, const std::vector<float>& w,
                                 int rows, int cols) {
  std::vector<double> y(size_t(T) * rows);
  for (int t = 0; t < T; ++t)
    for (int o = 0; o < rows; ++o) {
      double s = 0;
      for (int i = 0; i < cols; ++i) s += double(x[size_t(t) * cols + i]) * w[size_t(o) * cols + i];
      y[size_t(t) * rows + o] = s;
    }
  return y;
}

struct QuantCase {
  int bits, group_size;
};

class AffineMatmulTest : public ::testing::TestWithParam<QuantCase> {};

// MLX stores scales and biases as bf16, f16 or f32 (the dtype the model was quantized from).
testing::TensorBlob scalar_blob(ScalarType t, const std::vector<float>& v) {
  const std::vector<int64_t> shape{int64_t(v.size())};
  switch (t) {
    case ScalarType::kF32:
      return testing::f32_blob(shape, v);
    case ScalarType::kF16:
      return testing::f16_blob(shape, v);
    case ScalarType::kBF16:
      break;
  }
  return testing::bf16_blob(shape, v);
}

std::string scale_blob_dtype(ScalarType t) { return scalar_blob(t, {0.f}).dtype; }

TEST_P(AffineMatmulTest, MatchesNaiveDequantizedProduct) {
  const auto [bits, gs] = GetParam();
  // 384 columns give most group sizes fewer than 8 groups per row, 1,280 more than 8 and a
  // remainder (the decode GEMV takes groups eight at a time).
  for (const int cols : {384, 1280})
    for (const ScalarType scale_type : {ScalarType::kBF16, ScalarType::kF16, ScalarType::kF32}) {
      SCOPED_TRACE("bits=" + std::to_string(bits) + " gs=" + std::to_string(gs) +
                   " cols=" + std::to_string(cols) + " scales=" + scale_blob_dtype(scale_type));
      const int rows = 37;
      auto w = random_vector(size_t(rows) * cols, 7);
      auto q = testing::quantize_affine(w, {}, rows, cols, bits, gs);
      // The quantizer's bf16 scales and biases are exact in f16 and f32 too.
      const auto scales = scalar_blob(scale_type, q.scale_values);
      const auto biases = scalar_blob(scale_type, q.bias_values);
      WeightMatrix m;
      m.format = WeightFormat::kAffine;
      m.rows = rows;
      m.cols = cols;
      m.bits = bits;
      m.group_size = gs;
      m.scale_type = scale_type;
      m.data = q.weight.bytes.data();
      m.scales = scales.bytes.data();
      m.biases = biases.bytes.data();
      // The same matrix in 16-row tiles (37 rows: two full tiles and a partial one).
      AffineTileStorage storage;
      std::vector<WeightMatrix> layouts{m};
      if (affine_tiles_supported(m)) {
        layouts.push_back(tile_affine_matrix(m, storage));
        std::vector<float> rows_major(size_t(rows) * cols), tiled(rows_major.size());
        dequantize_rows(m, 0, rows, rows_major.data());
        dequantize_rows(layouts[1], 0, rows, tiled.data());
        EXPECT_EQ(rows_major, tiled) << "a tiled matrix dequantizes to the same floats";
        std::vector<float> part(size_t(cols) / 2), expected(part.size());
        const int k0 = gs, k1 = gs + int(part.size()) / gs * gs;
        dequantize_row_range(m, 21, k0, k1, expected.data());
        dequantize_row_range(layouts[1], 21, k0, k1, part.data());
        EXPECT_EQ(part, expected) << "columns " << k0 << ".." << k1 << " of a tiled row";
      }
      for (const WeightMatrix& layout : layouts)
      for (int T : {1, 2, 5, 13}) {
        SCOPED_TRACE(layout.tiled ? "tiled" : "row-major");
        const WeightMatrix& m = layout;
        auto x = random_vector(size_t(T) * cols, 11 + T);
        std::vector<float> y(size_t(T) * rows);
        matmul(x.data(), T, m, y.data(), decode_rows(T));
        // Prefill is fp32 throughout; decode rounds x to int16 per group (~2^-16 relative).
        EXPECT_LT(relative_error(y, naive_matmul(x, T, q.dequantized, rows, cols)),
                  T == 1 ? 1e-4 : 1e-5)
            << "T=" << T;
        if (T == 1) {
          // Decode is exactly the product with x rounded as documented in affine_gemv.h, up
          // to fp32 rounding of the group terms, which grows with the columns (about 3e-6 at
          // 1,280, before and after the kernel took groups eight at a time).
          const double rounding = cols <= 384 ? 2e-6 : 4e-6;
          EXPECT_LT(relative_error(y, naive_matmul(testing::round_to_int16_groups(x, gs), 1,
                                                   q.dequantized, rows, cols)),
                    rounding);
        }
      }
      // Dequantizing a row gives exactly the quantizer's values (up to the fused multiply-add).
      std::vector<float> row(cols);
      dequantize_rows(m, 5, 6, row.data());
      std::vector<float> expected(q.dequantized.begin() + 5 * cols,
                                  q.dequantized.begin() + 6 * cols);
      EXPECT_LT(relative_error(row, expected), 1e-6);
    }
}

INSTANTIATE_TEST_SUITE_P(AllModes, AffineMatmulTest,
                         ::testing::Values(QuantCase{2, 32}, QuantCase{3, 64}, QuantCase{4, 32},
                                           QuantCase{4, 64}, QuantCase{4, 128}, QuantCase{5, 64},
                                           QuantCase{6, 32}, QuantCase{6, 128}, QuantCase{8, 64},
                                           QuantCase{8, 128}, QuantCase{3, 32}, QuantCase{2, 128}));

TEST(MatmulTest, FloatFormatsMatchNaive) {
  const int rows = 29, cols = 203;  // odd sizes exercise the scalar tails
  auto w = random_vector(size_t(rows) * cols, 3);
  for (auto [format, blob] :
       {std::pair{WeightFormat::kF32, testing::f32_blob({rows, cols}, w)},
        std::pair{WeightFormat::kF16, testing::f16_blob({rows, cols}, w)},
        std::pair{WeightFormat::kBF16, testing::bf16_blob({rows, cols}, w)}}) {
    WeightMatrix m;
    m.format = format;
    m.rows = rows;
    m.cols = cols;
    m.data = blob.bytes.data();
    std::vector<float> stored(w.size());
    dequantize_rows(m, 0, rows, stored.data());
    for (int T : {1, 4, 7}) {
      auto x = random_vector(size_t(T) * cols, 5 + T);
      std::vector<float> y(size_t(T) * rows);
      matmul(x.data(), T, m, y.data(), decode_rows(T));
      EXPECT_LT(relative_error(y, naive_matmul(x, T, stored, rows, cols)), 1e-5);
      matmul_serial(x.data(), T, m, y.data(), decode_rows(T));
      EXPECT_LT(relative_error(y, naive_matmul(x, T, stored, rows, cols)), 1e-5);
    }
    // The stored values are the rounded originals.
    EXPECT_LE(relative_error(stored, w), format == WeightFormat::kF32 ? 0.0 : 1e-2);
  }
}

TEST(MatmulTest, RowSliceSelectsRows) {
  const int rows = 16, cols = 64;
  auto w = random_vector(size_t(rows) * cols, 9);
  auto q = testing::quantize_affine(w, {}, rows, cols, 4, 32);
  WeightMatrix m{WeightFormat::kAffine,
                 rows,
                 cols,
                 q.weight.bytes.data(),
                 4,
                 32,
                 ScalarType::kBF16,
                 q.scales.bytes.data(),
                 q.biases.bytes.data()};
  WeightMatrix s = m.row_slice(6, 10);
  std::vector<float> all(size_t(rows) * cols), part(size_t(4) * cols);
  dequantize_rows(m, 0, rows, all.data());
  dequantize_rows(s, 0, 4, part.data());
  EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin() + 6 * cols));
}

}  // namespace
}  // namespace qmlx
