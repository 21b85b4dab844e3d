// The MoE block's output on the device against ffn_layers.cpp's moe_layer, repeated here from
// the kernels it calls (vec::axpy over the active experts in ascending id, then the shared
// expert's sigmoid-gated axpy): tests know no model.
//
// Tolerance: none for the routed combine on lavapipe (the same fmas in the same order). The
// shared add multiplies by sigmoid(gate), which goes through std::exp on the CPU and the
// device's exp() here: within kSigmoidUlp (4 + |gate| ulp, as delta_gates_test.cpp argues) of
// each other, so an output may differ by that share of |sigmoid * shared| plus one rounding.
#include "backend/vulkan/moe_combine.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/activations.h"
#include "kernels/vec.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using MoeCombineTest = VulkanTest;

constexpr double kSigmoidUlp = 4 + 4;  // gates drawn in [-4, 4]

struct Routed {
  std::vector<int32_t> ids;
  std::vector<float> weights, rows;
};

// k distinct experts of E per token in a random order, their weights and output rows.
Routed random_routes(int T, int E, int k, int H, uint64_t seed) {
  Routed r;
  std::mt19937_64 rng(seed);
  for (int t = 0; t < T; ++t) {
    std::vector<int32_t> experts(E);
    std::iota(experts.begin(), experts.end(), 0);
    std::shuffle(experts.begin(), experts.end(), rng);
    r.ids.insert(r.ids.end(), experts.begin(), experts.begin() + k);
  }
  r.weights = random_floats(size_t(T) * k, seed + 1, 0.01f, 0.5f);
  r.rows = random_floats(size_t(T) * k * H, seed + 2, -3.f, 3.f);
  return r;
}

// moe_layer's combine: experts in ascending id, each over its tokens in order.
std::vector<float> cpu_combine(const Routed& r, int T, int E, int k, int H) {
  std::vector<float> out(size_t(T) * H, 0.f);
  for (int e = 0; e < E; ++e)
    for (int t = 0; t < T; ++t)
      for (int j = 0; j < k; ++j)
        if (r.ids[size_t(t) * k + j] == e)
          vec::axpy(out.data() + size_t(t) * H, r.weights[size_t(t) * k + j],
                    r.rows.data() + (size_t(t) * k + j) * H, H);
  return out;
}

TEST_F(MoeCombineTest, RoutedCombineMatchesCpuBitForBit) {
  struct Shape {
    int T, E, k, H;
  };
  // Qwen3.5-35B-A3B's routing at a decode row and a few prompt rows; odd widths and k = 1.
  for (const Shape s : {Shape{1, 256, 8, 2048}, Shape{6, 256, 8, 512}, Shape{3, 512, 10, 100},
                        Shape{4, 16, 1, 77}}) {
    SCOPED_TRACE("T " + std::to_string(s.T) + " k " + std::to_string(s.k) + " H " +
                 std::to_string(s.H));
    const Routed r = random_routes(s.T, s.E, s.k, s.H, s.H + s.k);
    Buffer rows = upload(r.rows), weights = upload(r.weights);
    Buffer ids = context().create_buffer(r.ids.size() * 4);
    context().upload(ids, 0, r.ids.data(), r.ids.size() * 4);
    Buffer out = context().create_buffer(size_t(s.T) * s.H * 4);
    CommandRecorder recorder(context());
    record_moe_combine(recorder, rows, ids, weights, s.T, s.k, s.H, out);
    recorder.submit_and_wait();
    const UlpStats st =
        compare_ulp(download(out, size_t(s.T) * s.H), cpu_combine(r, s.T, s.E, s.k, s.H));
    if (context().fma_mode() != FmaMode::kUnfused) {
      EXPECT_EQ(st.differing, 0u) << "max " << st.max_ulp << " ulp";
    } else {
      EXPECT_LE(st.max_ulp, 64);
    }
  }
}

TEST_F(MoeCombineTest, SharedExpertAddWithinSigmoidTolerance) {
  for (const int T : {1, 5}) {
    const int H = 1024;
    const std::vector<float> routed = random_floats(size_t(T) * H, T, -1.f, 1.f);
    const std::vector<float> shared = random_floats(size_t(T) * H, T + 1, -2.f, 2.f);
    const std::vector<float> gate = random_floats(T, T + 2, -4.f, 4.f);
    std::vector<float> cpu = routed;
    for (int t = 0; t < T; ++t)
      vec::axpy(cpu.data() + size_t(t) * H, sigmoid(gate[t]), shared.data() + size_t(t) * H, H);
    Buffer out = upload(routed), sb = upload(shared), gb = upload(gate);
    CommandRecorder recorder(context());
    record_shared_expert_add(recorder, out, sb, gb, T, H);
    recorder.submit_and_wait();
    const std::vector<float> device = download(out, cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) {
      const double term = sigmoid(gate[i / H]) * std::abs(double(shared[i]));
      const double bound =
          kSigmoidUlp * 0x1p-23 * term + 0x1p-23 * std::max(std::abs(device[i]), std::abs(cpu[i]));
      ASSERT_LE(std::abs(double(device[i]) - cpu[i]), bound) << "element " << i;
    }
    std::printf("[ info     ] shared add T %d: %zu of %zu differ, max %lld ulp\n", T,
                compare_ulp(device, cpu).differing, cpu.size(),
                static_cast<long long>(compare_ulp(device, cpu).max_ulp));
  }
}

}  // namespace
}  // namespace qmlx::vulkan::testing
