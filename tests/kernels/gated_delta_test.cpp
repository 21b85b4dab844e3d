// The gated delta rule, recurrent and chunked, against a naive double-precision recurrence in
// the HF orientation (S is [Dk][Dv]; model-spec §3.4 step 7).
#include "kernels/gated_delta.h"

#include <gtest/gtest.h>

#include <cmath>

#include "kernels/norms.h"
#include "test_util.h"

namespace qmlx {
namespace {

using testing::random_vector;
using testing::relative_error;

struct Problem {
  int T = 0, Hk = 2, Hv = 4, Dk = 16, Dv = 8;
  std::vector<float> rows, g, beta;  // rows: [T][q | k | v]
  size_t stride() const { return size_t(2 * Hk * Dk + Hv * Dv); }
  GatedDeltaInputs inputs() const {
    GatedDeltaInputs in;
    in.T = T;
    in.Hk = Hk;
    in.Hv = Hv;
    in.Dk = Dk;
    in.Dv = Dv;
    in.q = rows.data();
    in.k = rows.data() + Hk * Dk;
    in.v = rows.data() + 2 * Hk * Dk;
    in.row_stride = stride();
    in.g = g.data();
    in.beta = beta.data();
    return in;
  }
};

Problem make_problem(int T, uint64_t seed, int Dk = 16, int Dv = 8) {
  Problem p;
  p.T = T;
  p.Dk = Dk;
  p.Dv = Dv;
  p.rows = random_vector(size_t(T) * p.stride(), seed);
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < 2 * p.Hk; ++h)  // L2-normalised q and k, q scaled
      l2_norm_scaled(&p.rows[t * p.stride() + h * p.Dk], p.Dk, 1e-6f,
                     h < p.Hk ? 1.f / std::sqrt(float(p.Dk)) : 1.f);
  auto g = random_vector(size_t(T) * p.Hv, seed + 1), b = random_vector(size_t(T) * p.Hv, seed + 2);
  for (float& x : g) x = -std::abs(x) * 0.3f;
  for (float& x : b) x = 1.f / (1.f + std::exp(-x));
  p.g = g;
  p.beta = b;
  return p;
}

// state: [Hv][Dv][Dk] (engine layout) updated; returns out [T][Hv][Dv].
std::vector<double> naive(const Problem& p, std::vector<double>& state) {
  std::vector<double> out(size_t(p.T) * p.Hv * p.Dv);
  for (int h = 0; h < p.Hv; ++h) {
    int kh = h / (p.Hv / p.Hk);
    // S[i][j] with i < Dk, j < Dv.
    std::vector<double> S(size_t(p.Dk) * p.Dv);
    for (int i = 0; i < p.Dk; ++i)
      for (int j = 0; j < p.Dv; ++j) S[i * p.Dv + j] = state[(h * p.Dv + j) * p.Dk + i];
    for (int t = 0; t < p.T; ++t) {
      const float* r = &p.rows[t * p.stride()];
      const float *q = r + kh * p.Dk, *k = r + p.Hk * p.Dk + kh * p.Dk,
                  *v = r + 2 * p.Hk * p.Dk + h * p.Dv;
      double a = std::exp(double(p.g[t * p.Hv + h])), beta = p.beta[t * p.Hv + h];
      for (double& s : S) s *= a;
      for (int j = 0; j < p.Dv; ++j) {
        double m = 0;
        for (int i = 0; i < p.Dk; ++i) m += S[i * p.Dv + j] * k[i];
        double delta = beta * (v[j] - m);
        for (int i = 0; i < p.Dk; ++i) S[i * p.Dv + j] += k[i] * delta;
      }
      for (int j = 0; j < p.Dv; ++j) {
        double o = 0;
        for (int i = 0; i < p.Dk; ++i) o += S[i * p.Dv + j] * q[i];
        out[(t * p.Hv + h) * p.Dv + j] = o;
      }
    }
    for (int i = 0; i < p.Dk; ++i)
      for (int j = 0; j < p.Dv; ++j) state[(h * p.Dv + j) * p.Dk + i] = S[i * p.Dv + j];
  }
  return out;
}

class GatedDeltaTest : public ::testing::TestWithParam<std::pair<int, int>> {};

// Head sizes (Dk, Dv) that are and are not multiples of the register tile's 16 columns.
INSTANTIATE_TEST_SUITE_P(HeadSizes, GatedDeltaTest,
                         ::testing::Values(std::pair{16, 8}, std::pair{24, 20},
                                           std::pair{128, 128}));

TEST_P(GatedDeltaTest, RecurrentAndChunkedMatchNaiveAcrossChunks) {
  // 150 tokens: two full chunks and a partial one, starting from a non-zero state.
  Problem p = make_problem(150, 21, GetParam().first, GetParam().second);
  auto initial = random_vector(size_t(p.Hv) * p.Dv * p.Dk, 30, 0.3f);
  std::vector<double> expected_state(initial.begin(), initial.end());
  auto expected = naive(p, expected_state);

  for (bool chunked : {false, true}) {
    std::vector<float> state = initial, out(size_t(p.T) * p.Hv * p.Dv);
    if (chunked)
      gated_delta_chunked(p.inputs(), state.data(), out.data());
    else
      gated_delta_recurrent(p.inputs(), state.data(), out.data());
    EXPECT_LT(relative_error(out, expected), 2e-5) << "chunked=" << chunked;
    EXPECT_LT(relative_error(state, expected_state), 2e-5) << "chunked=" << chunked;
  }
}

TEST_P(GatedDeltaTest, ChunkedEqualsRecurrentOnSingleToken) {
  Problem p = make_problem(1, 40, GetParam().first, GetParam().second);
  std::vector<float> s1(size_t(p.Hv) * p.Dv * p.Dk, 0.f), s2 = s1, o1(p.Hv * p.Dv), o2 = o1;
  gated_delta_recurrent(p.inputs(), s1.data(), o1.data());
  gated_delta_chunked(p.inputs(), s2.data(), o2.data());
  EXPECT_LT(relative_error(o2, o1), 1e-6);
  EXPECT_LT(relative_error(s2, s1), 1e-6);
}

}  // namespace
}  // namespace qmlx
