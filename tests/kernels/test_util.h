// Helpers for kernel tests: seeded random data, the relative error measure the project uses
// everywhere (max |a - b| / max |b|), and reference versions of kernels in float64.
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

// Causal GQA attention in float64 over f32 K/V rows [P][Nkv][D] (kernels/attention.h's contract).
inline std::vector<double> naive_attention(const std::vector<float>& q, const std::vector<float>& k,
                                           const std::vector<float>& v, int T, int Nh, int Nkv,
                                           int D, int pos0) {
  std::vector<double> out(size_t(T) * Nh * D, 0.0);
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < Nh; ++h) {
      int kvh = h / (Nh / Nkv), n = pos0 + t + 1;
      std::vector<double> s(n);
      double m = -1e300, total = 0;
      for (int p = 0; p < n; ++p) {
        double d = 0;
        for (int i = 0; i < D; ++i)
          d += double(q[(t * Nh + h) * D + i]) * k[(p * Nkv + kvh) * D + i];
        s[p] = d / std::sqrt(double(D));
        m = std::max(m, s[p]);
      }
      for (double& x : s) total += x = std::exp(x - m);
      for (int p = 0; p < n; ++p)
        for (int i = 0; i < D; ++i)
          out[(t * Nh + h) * D + i] += s[p] / total * v[(p * Nkv + kvh) * D + i];
    }
  return out;
}

}  // namespace qmlx::testing
