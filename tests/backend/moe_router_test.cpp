// The MoE router on the device against ffn_layers.cpp's route_token, repeated here from the
// kernels it calls (softmax, std::partial_sort, the renormalisation): tests know no model.
//
// Ids: identical, order included, except where the CPU's k-th and (k+1)-th probabilities are
// closer than the weights' tolerance (a float near-tie, which the two exps may order either
// way); the test counts such rows and they are rare. Exact ties (equal logits) must resolve
// the same: the shader repeats libstdc++'s partial_sort.
//
// Weights: the CPU's std::exp and the device's exp() differ by a few ulp (kScalarExpUlp in the
// other tests), and everything after is the same sequence of roundings on perturbed inputs:
// each probability e_i / s moves by that much plus the sum's perturbation, at most the same
// relative amount; the renormalisation divides two such values. So weights agree to a
// relative kWeightTolerance = 4 x 16 ulp; observed below it by far (printed).
#include "backend/vulkan/moe_router.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "base/error.h"
#include "kernels/activations.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using MoeRouterTest = VulkanTest;

constexpr double kWeightTolerance = 64 * 0x1p-24;

struct Routes {
  std::vector<int32_t> ids;
  std::vector<float> weights;
  std::vector<bool> near_tie;  // per row: the CPU's k-th and (k+1)-th are within tolerance
};

// route_token of ffn_layers.cpp, row by row.
Routes cpu_route(const std::vector<float>& logits, int T, int E, int k, bool renormalize) {
  Routes r;
  for (int t = 0; t < T; ++t) {
    std::vector<float> probs(logits.begin() + size_t(t) * E, logits.begin() + size_t(t + 1) * E);
    softmax(probs.data(), E);
    std::vector<int> ids(E);
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                      [&](int a, int b) { return probs[a] > probs[b]; });
    float total = 0.f;
    for (int i = 0; i < k; ++i) total += probs[ids[i]];
    for (int i = 0; i < k; ++i) {
      r.ids.push_back(ids[i]);
      r.weights.push_back(renormalize ? probs[ids[i]] / total : probs[ids[i]]);
    }
    // The largest probability left out, against the smallest kept.
    float next = 0.f;
    std::vector<bool> kept(E, false);
    for (int i = 0; i < k; ++i) kept[ids[i]] = true;
    for (int e = 0; e < E; ++e)
      if (!kept[e]) next = std::max(next, probs[e]);
    const float kth = probs[ids[k - 1]];
    r.near_tie.push_back(k < E && kth - next <= kWeightTolerance * kth && kth != next);
  }
  return r;
}

Routes device_route(Context& ctx, const std::vector<float>& logits, int T, int E, int k,
                    bool renormalize) {
  Buffer in = ctx.create_buffer(logits.size() * 4);
  ctx.upload(in, 0, logits.data(), logits.size() * 4);
  Buffer ids = ctx.create_buffer(size_t(T) * k * 4), weights = ctx.create_buffer(size_t(T) * k * 4);
  CommandRecorder recorder(ctx);
  record_moe_route(recorder, in, T, E, k, renormalize, ids, weights);
  recorder.submit_and_wait();
  Routes r;
  r.ids.resize(size_t(T) * k);
  r.weights.resize(size_t(T) * k);
  ctx.download(ids, 0, r.ids.data(), r.ids.size() * 4);
  ctx.download(weights, 0, r.weights.data(), r.weights.size() * 4);
  return r;
}

// Compares row by row; returns the rows skipped as near-ties.
size_t expect_same_routes(const Routes& device, const Routes& cpu, int T, int k) {
  size_t skipped = 0;
  double worst = 0;
  for (int t = 0; t < T; ++t) {
    if (cpu.near_tie[t]) {
      ++skipped;
      continue;
    }
    for (int i = 0; i < k; ++i) {
      const size_t j = size_t(t) * k + i;
      if (device.ids[j] != cpu.ids[j]) {
        ADD_FAILURE() << "row " << t << " route " << i << ": expert " << device.ids[j]
                      << ", the CPU's " << cpu.ids[j];
        return skipped;
      }
      const double rel = std::abs(double(device.weights[j]) - cpu.weights[j]) / cpu.weights[j];
      worst = std::max(worst, rel);
      EXPECT_LE(rel, kWeightTolerance) << "row " << t << " route " << i;
    }
  }
  std::printf("[ info     ] %d rows: %zu near-ties skipped, weights within %.3g relative\n", T,
              skipped, worst);
  return skipped;
}

TEST_F(MoeRouterTest, RoutesMatchCpu) {
  // Qwen3.5-MoE (256 experts, top 8, renormalised), Qwen3-Next (512, top 10), and small shapes
  // where k is E or 1, with and without renormalisation.
  struct Shape {
    int E, k;
    bool renormalize;
  };
  for (const Shape s : {Shape{256, 8, true}, Shape{512, 10, true}, Shape{512, 10, false},
                        Shape{64, 1, true}, Shape{6, 6, false}, Shape{100, 7, true}}) {
    SCOPED_TRACE("E " + std::to_string(s.E) + " k " + std::to_string(s.k));
    const int T = 37;
    const std::vector<float> logits = random_floats(size_t(T) * s.E, s.E + s.k, -4.f, 4.f);
    const Routes cpu = cpu_route(logits, T, s.E, s.k, s.renormalize);
    const Routes device = device_route(context(), logits, T, s.E, s.k, s.renormalize);
    EXPECT_LE(expect_same_routes(device, cpu, T, s.k), size_t(1));
  }
}

TEST_F(MoeRouterTest, ExactTiesResolveAsTheCpusPartialSort) {
  // Logits on a coarse grid: most probabilities tie with several others, at the k-th place too.
  for (const int E : {8, 64, 256, 512}) {
    for (const int k : {1, 4, 8, 10}) {
      if (k > E) continue;
      SCOPED_TRACE("E " + std::to_string(E) + " k " + std::to_string(k));
      const int T = 16;
      std::vector<float> logits = random_floats(size_t(T) * E, E * 31 + k, -2.f, 2.f);
      for (float& x : logits) x = std::round(x * 2.f) / 2.f;
      for (const bool renormalize : {true, false}) {
        const Routes cpu = cpu_route(logits, T, E, k, renormalize);
        const Routes device = device_route(context(), logits, T, E, k, renormalize);
        EXPECT_EQ(expect_same_routes(device, cpu, T, k), 0u);
      }
    }
  }
}

TEST_F(MoeRouterTest, RefusesShapesBeyondTheShader) {
  Buffer b = context().create_buffer(4 * 2048);
  CommandRecorder recorder(context());
  EXPECT_THROW(record_moe_route(recorder, b, 1, 2048, 8, true, b, b), Error);
  EXPECT_THROW(record_moe_route(recorder, b, 1, 64, 33, true, b, b), Error);
}

}  // namespace
}  // namespace qmlx::vulkan::testing
