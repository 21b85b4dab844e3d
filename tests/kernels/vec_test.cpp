// vec::argmax, vec::exp_shifted (the sampler's pass over a logits row) and vec::select_by_bits
// (a grammar's mask applied to it) against scalar loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/vec.h"

namespace qmlx {
namespace {

TEST(VecSelectByBitsTest, MatchesTestingEachBitForEveryKindOfWord) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-5.f, 5.f);
  const float fill = -std::numeric_limits<float>::infinity();
  // Lengths around whole words; words all ones, all zeros, one bit either way, random.
  for (size_t n :
       {size_t{1}, size_t{7}, size_t{63}, size_t{64}, size_t{65}, size_t{200}, size_t{1000}}) {
    std::vector<float> x(n), y(n, 123.f);
    for (float& v : x) v = u(rng);
    std::vector<uint64_t> keep((n + 63) / 64);
    for (size_t w = 0; w < keep.size(); ++w) {
      const uint64_t kinds[] = {~uint64_t{0}, 0, uint64_t{1} << (w % 64),
                                ~(uint64_t{1} << (w % 64)), rng()};
      keep[w] = kinds[w % 5];
    }
    vec::select_by_bits(y.data(), x.data(), keep.data(), fill, n);
    for (size_t i = 0; i < n; ++i) {
      const bool kept = (keep[i / 64] >> (i % 64)) & 1;
      ASSERT_EQ(y[i], kept ? x[i] : fill) << "n " << n << " i " << i;
    }
  }
}

TEST(VecArgmaxTest, FirstLargestAtEveryLengthAndPosition) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-5.f, 5.f);
  for (size_t n = 1; n <= 40; ++n) {
    for (size_t at = 0; at < n; ++at) {
      std::vector<float> a(n);
      for (float& x : a) x = u(rng);
      a[at] = 9.f;
      EXPECT_EQ(vec::argmax(a.data(), n), at) << n;
      a[n - 1 - (n - 1 - at) / 2] = 9.f;  // a tie at or after `at`: the first still wins
      EXPECT_EQ(vec::argmax(a.data(), n), at) << n;
      EXPECT_EQ(vec::argmax(a.data(), n), size_t(std::max_element(a.begin(), a.end()) - a.begin()));
    }
  }
}

TEST(VecArgmaxTest, PassesOverNanAndHandlesInfinities) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> a(19, -inf);
  EXPECT_EQ(vec::argmax(a.data(), a.size()), 0u);  // all -inf: the first
  a[4] = nan;
  a[11] = -3.f;
  a[17] = nan;
  EXPECT_EQ(vec::argmax(a.data(), a.size()), 11u);
  a[18] = inf;
  EXPECT_EQ(vec::argmax(a.data(), a.size()), 18u);
  std::vector<float> nans(10, nan);
  EXPECT_EQ(vec::argmax(nans.data(), nans.size()), 0u);
  EXPECT_EQ(vec::argmax(nans.data(), 0), 0u);
}

TEST(VecExpShiftedTest, MatchesStdExpAndSumsInDouble) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.f, 4.f);
  for (size_t n : {2u, 7u, 8u, 9u, 100u, 248323u}) {
    std::vector<float> x(n), y(n);
    for (float& v : x) v = normal(rng);
    x[n / 2] = -std::numeric_limits<float>::infinity();  // a masked id weighs exactly 0
    const float top = *std::max_element(x.begin(), x.end());
    for (float t : {0.3f, 1.f, 1.7f}) {
      const double total = vec::exp_shifted(y.data(), x.data(), top, t, n);
      double expect_total = 0;
      for (size_t i = 0; i < n; ++i) {
        const double e = std::exp((double(x[i]) - top) / t);
        expect_total += e;
        ASSERT_NEAR(y[i], e, 1e-5 * e + 1e-30) << i;  // the argument is rounded to float
      }
      EXPECT_EQ(y[n / 2], 0.f);
      EXPECT_NEAR(total, expect_total, 1e-6 * expect_total);
      EXPECT_EQ(vec::sum_exp_shifted(x.data(), top, t, n), total);
    }
  }
}

}  // namespace
}  // namespace qmlx
