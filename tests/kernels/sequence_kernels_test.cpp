// Norms, RoPE, convolution and attention against naive scalar versions.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/activations.h"
#include "kernels/attention.h"
#include "kernels/causal_conv.h"
#include "kernels/norms.h"
#include "kernels/rope.h"
#include "kernels/scalar_type.h"
#include "kernels/simd.h"
#include "test_util.h"

namespace qmlx {
namespace {

using testing::naive_attention;
using testing::random_vector;
using testing::relative_error;

TEST(NormsTest, RmsNormAndGatedMatchFormula) {
  const int n = 77;
  auto x = random_vector(n, 1), w = random_vector(n, 2), z = random_vector(n, 3);
  std::vector<float> y(n), g(n);
  rms_norm(x.data(), w.data(), n, 1e-6f, y.data());
  rms_norm_gated(x.data(), z.data(), w.data(), n, 1e-6f, g.data());
  double ms = 0;
  for (float v : x) ms += double(v) * v;
  double inv = 1 / std::sqrt(ms / n + 1e-6);
  std::vector<double> ey(n), eg(n);
  for (int i = 0; i < n; ++i) {
    ey[i] = x[i] * inv * w[i];
    eg[i] = ey[i] * z[i] / (1 + std::exp(-double(z[i])));
  }
  EXPECT_LT(relative_error(y, ey), 1e-6);
  EXPECT_LT(relative_error(g, eg), 1e-6);
}

TEST(NormsTest, L2NormScaled) {
  auto x = random_vector(16, 4);
  auto y = x;
  l2_norm_scaled(y.data(), 16, 1e-6f, 0.25f);
  double s = 0;
  for (float v : x) s += double(v) * v;
  std::vector<double> e(16);
  for (int i = 0; i < 16; ++i) e[i] = x[i] / std::sqrt(s + 1e-6) * 0.25;
  EXPECT_LT(relative_error(y, e), 1e-6);
}

TEST(ActivationsTest, SoftmaxSumsToOneAndKeepsOrder) {
  std::vector<float> x = {10.f, 9.f, -5.f, 0.f};
  softmax(x.data(), x.size());
  EXPECT_NEAR(x[0] + x[1] + x[2] + x[3], 1.f, 1e-6);
  EXPECT_NEAR(x[0] / x[1], std::exp(1.0), 1e-4);
  EXPECT_GT(x[3], x[2]);
}

TEST(RopeTest, RotatesOnlyTheFirstRotDimsInHalves) {
  const int heads = 3, D = 32, R = 8;
  const double theta = 1e7;
  auto x = random_vector(heads * D, 5);
  auto y = x;
  const int64_t pos = 1234;
  apply_rope(y.data(), heads, D, R, rope_angles(pos, R, theta));
  for (int h = 0; h < heads; ++h) {
    for (int i = 0; i < R / 2; ++i) {
      double angle = pos * std::pow(theta, -2.0 * i / R);
      double a = x[h * D + i], b = x[h * D + i + R / 2];
      EXPECT_NEAR(y[h * D + i], a * std::cos(angle) - b * std::sin(angle), 1e-5);
      EXPECT_NEAR(y[h * D + i + R / 2], b * std::cos(angle) + a * std::sin(angle), 1e-5);
    }
    for (int i = R; i < D; ++i) EXPECT_EQ(y[h * D + i], x[h * D + i]);
  }
}

TEST(CausalConvTest, MatchesZeroPaddedConvolutionAndSplitsExactly) {
  const int T = 11, C = 13, K = 4;
  auto x = random_vector(size_t(T) * C, 6), w = random_vector(size_t(K) * C, 7);
  std::vector<double> expected(size_t(T) * C);
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < C; ++c) {
      double s = 0;
      for (int j = 0; j < K; ++j) {
        int src = t - (K - 1) + j;
        if (src >= 0) s += double(w[j * C + c]) * x[src * C + c];
      }
      expected[t * C + c] = s / (1 + std::exp(-s));
    }
  std::vector<float> state(size_t(K - 1) * C, 0.f), out(size_t(T) * C);
  causal_conv1d_silu(x.data(), C, T, C, K, w.data(), state.data(), out.data());
  EXPECT_LT(relative_error(out, expected), 1e-6);
  // The state is the last K-1 input rows.
  for (int r = 0; r < K - 1; ++r)
    for (int c = 0; c < C; ++c) EXPECT_EQ(state[r * C + c], x[(T - (K - 1) + r) * C + c]);

  // Feeding 2 + 1 + 8 rows with the carried state gives the same output.
  std::vector<float> s2(size_t(K - 1) * C, 0.f), out2(size_t(T) * C);
  int done = 0;
  for (int n : {2, 1, 8}) {
    causal_conv1d_silu(x.data() + done * C, C, n, C, K, w.data(), s2.data(),
                       out2.data() + done * C);
    done += n;
  }
  EXPECT_EQ(out, out2);
}

TEST(AttentionTest, CausalGqaMatchesNaive) {
  const int T = 5, Nh = 4, Nkv = 2, D = 24, pos0 = 7, P = pos0 + T;
  auto q = random_vector(size_t(T) * Nh * D, 8), k = random_vector(size_t(P) * Nkv * D, 9),
       v = random_vector(size_t(P) * Nkv * D, 10);
  std::vector<float> out(q.size());
  AttentionShape s{T, Nh, Nkv, D, pos0, 1.f / std::sqrt(float(D))};
  attention(s, q.data(), k.data(), v.data(), KvType::kF32, out.data());
  EXPECT_LT(relative_error(out, naive_attention(q, k, v, T, Nh, Nkv, D, pos0)), 1e-5);
}

TEST(VectorExpTest, CloseToStdExpAndZeroForMaskedScores) {
  for (float x = -86.9f; x < 88.f; x += 0.0137f) {
    float lanes[8];
    _mm256_storeu_ps(lanes, simd::exp(_mm256_set1_ps(x)));
    ASSERT_NEAR(lanes[0], std::exp(x), 4e-7f * std::exp(x)) << x;
  }
  for (float x : {-87.5f, -1000.f, -std::numeric_limits<float>::infinity()}) {
    float lanes[8];
    _mm256_storeu_ps(lanes, simd::exp(_mm256_set1_ps(x)));
    EXPECT_EQ(lanes[0], 0.f) << x;
  }
}

TEST(ActivationsTest, SiluMulMatchesDoubleOverTheWholeRange) {
  std::vector<float> a, b;
  for (float x = -120.f; x < 120.f; x += 0.173f) a.push_back(x), b.push_back(0.5f + x * 0.01f);
  std::vector<double> expected(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    expected[i] = double(a[i]) / (1 + std::exp(-double(a[i]))) * b[i];
  silu_mul(a.data(), b.data(), a.size());  // 1387 values: the vector body and a scalar tail
  EXPECT_LT(relative_error(a, expected), 1e-6);
}

// Prompts longer than a key block (64) and a query block, a head size that is not a multiple
// of 16, and decode's single-row path.
TEST(AttentionTest, LongBlocksAndSingleRowMatchNaive) {
  const int Nh = 8, Nkv = 2, D = 40;
  for (auto [T, pos0] : {std::pair{150, 37}, std::pair{1, 200}, std::pair{2, 63}}) {
    const int P = pos0 + T;
    auto q = random_vector(size_t(T) * Nh * D, 20 + T), k = random_vector(size_t(P) * Nkv * D, 21),
         v = random_vector(size_t(P) * Nkv * D, 22);
    std::vector<float> out(q.size());
    AttentionShape s{T, Nh, Nkv, D, pos0, 1.f / std::sqrt(float(D))};
    attention(s, q.data(), k.data(), v.data(), KvType::kF32, out.data());
    EXPECT_LT(relative_error(out, naive_attention(q, k, v, T, Nh, Nkv, D, pos0)), 1e-5)
        << "T=" << T << " pos0=" << pos0;
  }
}

// A query row's result must not depend on how the prompt was cut into prefill chunks: the
// cache's warm == cold guarantee prefills the same tokens in different pieces.
TEST(AttentionTest, ChunkingDoesNotChangeAnyBit) {
  const int T = 181, Nh = 4, Nkv = 1, D = 32;
  auto q = random_vector(size_t(T) * Nh * D, 30), k = random_vector(size_t(T) * Nkv * D, 31),
       v = random_vector(size_t(T) * Nkv * D, 32);
  std::vector<uint16_t> kb(k.size()), vb(v.size());
  convert_from_float(k.data(), k.size(), ScalarType::kBF16, kb.data());
  convert_from_float(v.data(), v.size(), ScalarType::kBF16, vb.data());
  std::vector<float> whole(q.size()), pieces(q.size());
  AttentionShape s{T, Nh, Nkv, D, 0, 1.f / std::sqrt(float(D))};
  attention(s, q.data(), kb.data(), vb.data(), KvType::kBF16, whole.data());
  int done = 0;
  for (int n : {7, 64, 3, 100, 7}) {
    AttentionShape piece{n, Nh, Nkv, D, done, s.scale};
    attention(piece, q.data() + size_t(done) * Nh * D, kb.data(), vb.data(), KvType::kBF16,
              pieces.data() + size_t(done) * Nh * D);
    done += n;
  }
  ASSERT_EQ(done, T);
  EXPECT_EQ(whole, pieces);
}

TEST(AttentionTest, Bf16CacheReadsRoundedValues) {
  const int T = 3, Nh = 2, Nkv = 1, D = 16, P = T;
  auto q = random_vector(size_t(T) * Nh * D, 11), k = random_vector(size_t(P) * Nkv * D, 12),
       v = random_vector(size_t(P) * Nkv * D, 13);
  std::vector<uint16_t> kb(k.size()), vb(v.size());
  convert_from_float(k.data(), k.size(), ScalarType::kBF16, kb.data());
  convert_from_float(v.data(), v.size(), ScalarType::kBF16, vb.data());
  std::vector<float> kr(k.size()), vr(v.size()), out(q.size());
  convert_to_float(kb.data(), ScalarType::kBF16, k.size(), kr.data());
  convert_to_float(vb.data(), ScalarType::kBF16, v.size(), vr.data());
  AttentionShape s{T, Nh, Nkv, D, 0, 1.f / std::sqrt(float(D))};
  attention(s, q.data(), kb.data(), vb.data(), KvType::kBF16, out.data());
  EXPECT_LT(relative_error(out, naive_attention(q, kr, vr, T, Nh, Nkv, D, 0)), 1e-5);
}

}  // namespace
}  // namespace qmlx
