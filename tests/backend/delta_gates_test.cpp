// The Gated DeltaNet gates on the device against delta_net_layer.cpp's (repeated here from the
// kernels' activations.h: tests know no model): beta = sigmoid(b), g = A * softplus(a + dt_bias)
// with A = -exp(A_log) computed on the host, as the weight loader does.
//
// Tolerance: the CPU takes std::exp and std::log1p from glibc (within an ulp of exact), the
// device its exp() and log() (log1p by Goldberg's formula, delta_gates.comp). lavapipe's exp(x)
// is exp2(x * log2 e), and rounding that product costs exp(x) up to |x| * 2^-24 relative, about
// |x| ulp; the other roundings (1 + e, the division, log, the product with A) add a few. So
// element i may differ by kBaseUlp + |x_i| ulp, x_i the argument of its exp (-b for beta,
// a + dt_bias for g): observed up to 22 ulp at |x| = 28, at most 7 for |x| <= 10 (printed).
// Above the softplus threshold (a + dt_bias > 20) both sides compute A * x: exact.
#include "backend/vulkan/delta_gates.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "kernels/activations.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using DeltaGatesTest = VulkanTest;

constexpr double kBaseUlp = 4;

// Elements beyond kBaseUlp + |arg| ulp of the CPU's; the largest distance in *max_ulp.
size_t beyond_tolerance(const std::vector<float>& device, const std::vector<float>& cpu,
                        const std::vector<float>& arg, int64_t* max_ulp) {
  size_t bad = 0;
  *max_ulp = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const int64_t d = ulp_distance(device[i], cpu[i]);
    *max_ulp = std::max(*max_ulp, d);
    bad += double(d) > kBaseUlp + std::abs(arg[i]);
  }
  return bad;
}

TEST_F(DeltaGatesTest, GatesMatchCpuWithinLibmTolerance) {
  // Qwen3.5-0.8B's 16 value heads, the 122B's 64; 5 rows (a short prefill), 1 (decode).
  for (const int Hv : {16, 64, 3}) {
    for (const int T : {1, 5}) {
      SCOPED_TRACE("Hv " + std::to_string(Hv) + " T " + std::to_string(T));
      const size_t n = size_t(T) * Hv;
      const std::vector<float> b = random_floats(n, Hv + T, -10.f, 10.f);
      // a + dt_bias from -30 (softplus tiny: log1p's small-argument range) to past 20.
      const std::vector<float> a = random_floats(n, 2 * Hv + T, -28.f, 24.f);
      const std::vector<float> dt_bias = random_floats(Hv, 3 * Hv, -2.f, 2.f);
      std::vector<float> A = random_floats(Hv, 4 * Hv, -3.f, 2.f);
      for (float& x : A) x = -std::exp(x);
      std::vector<float> beta = b, g = a, beta_arg(n), g_arg(n);
      for (size_t i = 0; i < n; ++i) {
        beta_arg[i] = -b[i];
        g_arg[i] = a[i] + dt_bias[i % Hv];
        beta[i] = sigmoid(beta[i]);
        g[i] = A[i % Hv] * softplus(g_arg[i]);
      }
      Buffer bb = upload(b), ab = upload(a), Ab = upload(A), db = upload(dt_bias);
      CommandRecorder recorder(context());
      record_delta_gates(recorder, bb, ab, Ab, db, T, Hv);
      recorder.submit_and_wait();
      int64_t beta_ulp = 0, g_ulp = 0;
      EXPECT_EQ(beyond_tolerance(download(bb, n), beta, beta_arg, &beta_ulp), 0u);
      EXPECT_EQ(beyond_tolerance(download(ab, n), g, g_arg, &g_ulp), 0u);
      std::printf("[ info     ] Hv %d T %d: beta within %lld ulp, g within %lld ulp\n", Hv, T,
                  static_cast<long long>(beta_ulp), static_cast<long long>(g_ulp));
    }
  }
}

TEST_F(DeltaGatesTest, AboveTheSoftplusThresholdGIsExact) {
  const int Hv = 8, T = 2;
  const std::vector<float> a = random_floats(size_t(T) * Hv, 9, 21.f, 40.f);
  const std::vector<float> dt_bias = random_floats(Hv, 10, 0.f, 1.f);
  const std::vector<float> A = random_floats(Hv, 11, -8.f, -0.1f);
  std::vector<float> g = a;
  for (size_t i = 0; i < g.size(); ++i) g[i] = A[i % Hv] * softplus(g[i] + dt_bias[i % Hv]);
  Buffer bb = upload(a), ab = upload(a), Ab = upload(A), db = upload(dt_bias);
  CommandRecorder recorder(context());
  record_delta_gates(recorder, bb, ab, Ab, db, T, Hv);
  recorder.submit_and_wait();
  EXPECT_EQ(compare_ulp(download(ab, g.size()), g).differing, 0u);
}

}  // namespace
}  // namespace qmlx::vulkan::testing
