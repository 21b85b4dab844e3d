// Helpers for kernel tests: seeded random data and the relative error measure the project
// uses everywhere (max |a - b| / max |b|).
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace qmlx::testing {

inline std::vector<float> random_vector(size_t n, uint64_t seed, float stddev = 1.f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

template <typename A, typename B>
double relative_error(const A& a, const B& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    num = std::max(num, std::abs(double(a[i]) - double(b[i])));
    den = std::max(den, std::abs(double(b[i])));
  }
  return den == 0 ? num : num / den;
}

// x rounded as the decode GEMV rounds it (kernels/int16_activations.h), per group: step = max|x_g|
// / 32767, x^ = step * round(x / step).
inline std::vector<float> round_to_int16_groups(const std::vector<float>& x, int group_size) {
  std::vector<float> out(x.size());
  for (size_t g = 0; g < x.size(); g += group_size) {
    double amax = 0;
    for (int i = 0; i < group_size; ++i) amax = std::max(amax, std::abs(double(x[g + i])));
    const double step = amax / 32767;
    for (int i = 0; i < group_size; ++i)
      out[g + i] = step == 0 ? 0.f : float(step * std::nearbyint(x[g + i] / step));
  }
  return out;
}

}  // namespace qmlx::testing
