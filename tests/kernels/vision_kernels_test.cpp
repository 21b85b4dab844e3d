// The vision tower's kernels against float64 versions of their formulas: LayerNorm with bias,
// both GELUs, the biased matmul, unmasked attention, the 2D rotary angles and the bilinear
// interpolation of the position grid.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "base/error.h"
#include "kernels/activations.h"
#include "kernels/biased_matmul.h"
#include "kernels/bidirectional_attention.h"
#include "kernels/grid_interpolation.h"
#include "kernels/norms.h"
#include "kernels/vision_rope.h"
#include "test_util.h"

namespace qmlx {
namespace {

using testing::random_vector;
using testing::relative_error;

WeightMatrix f32_matrix(const std::vector<float>& values, int rows, int cols) {
  WeightMatrix m;
  m.format = WeightFormat::kF32;
  m.rows = rows;
  m.cols = cols;
  m.data = reinterpret_cast<const uint8_t*>(values.data());
  return m;
}

TEST(LayerNormTest, MatchesFormulaAndKeepsAccuracyUnderALargeMean) {
  const int n = 83;
  auto x = random_vector(n, 1), w = random_vector(n, 2), b = random_vector(n, 3);
  for (float& v : x) v += 1000.f;  // E[x^2] - E[x]^2 would lose the variance here
  std::vector<float> y(n);
  layer_norm(x.data(), w.data(), b.data(), n, 1e-6f, y.data());
  double mean = 0, var = 0;
  for (float v : x) mean += v;
  mean /= n;
  for (float v : x) var += (v - mean) * (v - mean);
  var /= n;
  std::vector<double> expected(n);
  for (int i = 0; i < n; ++i) expected[i] = (x[i] - mean) / std::sqrt(var + 1e-6) * w[i] + b[i];
  EXPECT_LT(relative_error(y, expected), 2e-5);
  // In place.
  layer_norm(x.data(), w.data(), b.data(), n, 1e-6f, x.data());
  EXPECT_EQ(std::memcmp(x.data(), y.data(), n * sizeof(float)), 0);
}

// Arrays longer than one task of the pool, with a tail that fills no 8 lanes, and the far ends:
// every value within 1e-6 of the formula, none touched twice or skipped.
TEST(GeluTest, LongArraysAndTheirTailsFollowTheFormula) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> wide(-12.f, 12.f);
  std::vector<float> x(40003);
  for (float& v : x) v = wide(rng);
  x[0] = -1e20f, x[1] = 1e20f, x.back() = 0.5f;
  std::vector<float> y = x;
  gelu_tanh_in_place(y.data(), y.size());
  size_t off = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    const double t = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    off += !(std::abs(y[i] - t) <= 1e-6 * std::max(1.0, std::abs(t)));
  }
  EXPECT_EQ(off, 0u);
  std::vector<float> z = x;
  gelu_erf_in_place(z.data(), z.size());
  for (size_t i = 2; i < x.size(); ++i)
    ASSERT_NEAR(z[i], 0.5 * x[i] * (1 + std::erf(x[i] / std::sqrt(2.0))), 1e-5) << i;
}

TEST(GeluTest, BothFormsMatchTheirFormulasAndDiffer) {
  std::vector<float> x;
  for (int i = -800; i <= 800; ++i) x.push_back(i / 100.f);
  auto tanh_form = x, erf_form = x;
  gelu_tanh_in_place(tanh_form.data(), x.size());
  gelu_erf_in_place(erf_form.data(), x.size());
  double most_apart = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    const double t = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    const double e = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    EXPECT_NEAR(tanh_form[i], t, 1e-6 * std::max(1.0, std::abs(t))) << v;
    EXPECT_NEAR(erf_form[i], e, 1e-6 * std::max(1.0, std::abs(e))) << v;
    most_apart = std::max(most_apart, std::abs(t - e));
  }
  EXPECT_GT(most_apart, 1e-4);  // the forms are not interchangeable
  std::vector<float> zero{0.f}, big{-30.f, 30.f};
  gelu_tanh_in_place(zero.data(), 1);
  gelu_erf_in_place(big.data(), 2);
  EXPECT_EQ(zero[0], 0.f);
  EXPECT_EQ(big[0], -0.f);
  EXPECT_EQ(big[1], 30.f);
}

TEST(BiasedMatmulTest, AddsTheBiasToEveryRow) {
  const int T = 5, rows = 24, cols = 40;
  auto w = random_vector(size_t(rows) * cols, 4), x = random_vector(size_t(T) * cols, 5),
       bias = random_vector(rows, 6);
  std::vector<float> y(size_t(T) * rows);
  matmul_biased(x.data(), T, f32_matrix(w, rows, cols), bias.data(), y.data());
  std::vector<double> expected(y.size());
  for (int t = 0; t < T; ++t)
    for (int o = 0; o < rows; ++o) {
      double s = bias[o];
      for (int i = 0; i < cols; ++i) s += double(x[t * cols + i]) * w[o * cols + i];
      expected[t * rows + o] = s;
    }
  EXPECT_LT(relative_error(y, expected), 1e-6);
}

TEST(BidirectionalAttentionTest, EveryRowSeesEveryRowThroughAFusedQkvLayout) {
  const int T = 101, heads = 3, D = 16;  // three query blocks of 48, the last one partial
  const size_t stride = size_t(3) * heads * D;
  auto qkv = random_vector(T * stride, 7);
  const float* q = qkv.data();
  const float* k = q + heads * D;
  const float* v = k + heads * D;
  BidirectionalAttentionShape s{T, heads, D, stride, 1.f / std::sqrt(float(D))};
  std::vector<float> out(size_t(T) * heads * D);
  bidirectional_attention(s, q, k, v, out.data());

  std::vector<double> expected(out.size());
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < heads; ++h) {
      std::vector<double> p(T);
      double most = -1e300, sum = 0;
      for (int j = 0; j < T; ++j) {
        double dot = 0;
        for (int d = 0; d < D; ++d)
          dot += double(q[t * stride + h * D + d]) * k[j * stride + h * D + d];
        p[j] = dot * s.scale;
        most = std::max(most, p[j]);
      }
      for (double& x : p) sum += (x = std::exp(x - most));
      for (int d = 0; d < D; ++d) {
        double o = 0;
        for (int j = 0; j < T; ++j) o += p[j] / sum * v[j * stride + h * D + d];
        expected[(t * heads + h) * D + d] = o;
      }
    }
  EXPECT_LT(relative_error(out, expected), 1e-5);

  // The split over threads changes no row's arithmetic: a second call gives the same bits.
  std::vector<float> again(out.size());
  bidirectional_attention(s, q, k, v, again.data());
  EXPECT_EQ(std::memcmp(out.data(), again.data(), out.size() * sizeof(float)), 0);
}

TEST(VisionRopeTest, RowAnglesThenColumnAnglesOverTheWholeHead) {
  const int D = 32;
  const RopeAngles a = vision_rope_angles(5, 11, D, 10000.0);
  ASSERT_EQ(a.cos.size(), size_t(D / 2));
  for (int i = 0; i < D / 4; ++i) {
    // transformers: inv_freq = 1 / theta^(arange(0, D/2, 2) / (D/2)).
    const double f = 1.0 / std::pow(10000.0, 2.0 * i / (D / 2));
    EXPECT_NEAR(a.cos[i], std::cos(5 * f), 1e-7);
    EXPECT_NEAR(a.sin[i], std::sin(5 * f), 1e-7);
    EXPECT_NEAR(a.cos[D / 4 + i], std::cos(11 * f), 1e-7);
    EXPECT_NEAR(a.sin[D / 4 + i], std::sin(11 * f), 1e-7);
  }
  // Applied over all D dims in rotate-half pairs (i, i + D/2).
  auto x = random_vector(2 * D, 8);
  auto y = x;
  apply_rope(y.data(), 2, D, D, a);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < D / 2; ++i) {
      const double lo = x[h * D + i], hi = x[h * D + i + D / 2];
      EXPECT_NEAR(y[h * D + i], lo * a.cos[i] - hi * a.sin[i], 1e-6);
      EXPECT_NEAR(y[h * D + i + D / 2], hi * a.cos[i] + lo * a.sin[i], 1e-6);
    }
}

TEST(GridInterpolationTest, LinspaceIsExactAtBothEnds) {
  EXPECT_EQ(linspace_point(47.f, 1, 0), 0.f);
  for (int n : {2, 3, 7, 64, 255}) {
    EXPECT_EQ(linspace_point(47.f, n, 0), 0.f);
    EXPECT_EQ(linspace_point(47.f, n, n - 1), 47.f);
    for (int i = 0; i < n; ++i) EXPECT_NEAR(linspace_point(47.f, n, i), 47.0 * i / (n - 1), 1e-5);
  }
}

// The formula in float64, from the grid coordinates.
std::vector<double> bilinear(const std::vector<float>& table, int side, int dim, int h, int w) {
  std::vector<double> out(size_t(h) * w * dim);
  for (int i = 0; i < h; ++i)
    for (int j = 0; j < w; ++j) {
      const double y = h == 1 ? 0 : double(side - 1) * i / (h - 1);
      const double x = w == 1 ? 0 : double(side - 1) * j / (w - 1);
      const int y0 = int(y), x0 = int(x), y1 = std::min(y0 + 1, side - 1),
                x1 = std::min(x0 + 1, side - 1);
      const double dy = y - y0, dx = x - x0;
      for (int d = 0; d < dim; ++d)
        out[(size_t(i) * w + j) * dim + d] =
            (1 - dy) * (1 - dx) * table[(y0 * side + x0) * dim + d] +
            (1 - dy) * dx * table[(y0 * side + x1) * dim + d] +
            dy * (1 - dx) * table[(y1 * side + x0) * dim + d] +
            dy * dx * table[(y1 * side + x1) * dim + d];
    }
  return out;
}

TEST(GridInterpolationTest, ResizesTheGridWithAlignedCorners) {
  const int side = 6, dim = 12;
  auto table = random_vector(size_t(side) * side * dim, 9);
  const WeightMatrix m = f32_matrix(table, side * side, dim);
  for (auto [h, w] : {std::pair{4, 6}, {8, 8}, {2, 14}, {1, 3}, {6, 6}}) {
    std::vector<float> out(size_t(h) * w * dim);
    interpolate_grid(m, side, h, w, out.data());
    EXPECT_LT(relative_error(out, bilinear(table, side, dim, h, w)), 1e-6) << h << "x" << w;
  }
  // The same size is the table itself, bit for bit; corners are always the table's corners.
  std::vector<float> same(table.size());
  interpolate_grid(m, side, side, side, same.data());
  EXPECT_EQ(std::memcmp(same.data(), table.data(), table.size() * sizeof(float)), 0);
  std::vector<float> big(size_t(9) * 13 * dim);
  interpolate_grid(m, side, 9, 13, big.data());
  const size_t last = size_t(9 * 13 - 1) * dim, table_last = size_t(side * side - 1) * dim;
  for (int d = 0; d < dim; ++d) {
    EXPECT_EQ(big[d], table[d]);
    EXPECT_EQ(big[last + d], table[table_last + d]);
  }
  EXPECT_THROW(interpolate_grid(f32_matrix(table, 35, dim), side, 2, 2, same.data()), Error);
}

}  // namespace
}  // namespace qmlx
