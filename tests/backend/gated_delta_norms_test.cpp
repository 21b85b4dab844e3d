// The Gated DeltaNet norms on the device against kernels/norms.h: l2_norm_scaled of q/k heads
// and rms_norm_gated of the output heads.
//
// Tolerance: none for the L2 norm on lavapipe at head sizes that are a multiple of 8 (the sum
// follows the CPU's order; fma, division and square root are correctly rounded); other sizes
// within 2 ulp (the CPU's scalar tail is whatever GCC's vectorizer makes of it, see
// rms_norm_test.cpp). The gated norm multiplies by the CPU's scalar silu, whose std::exp the
// device's exp() is not: lavapipe's exp() is a few ulp from glibc's, carried through
// 1 / (1 + e) and three products; observed up to 8 ulp, bounded by kScalarExpUlp.
#include <cmath>
#include <tuple>

#include "backend/vulkan/l2_norm.h"
#include "backend/vulkan/rms_norm_gated.h"
#include "kernels/norms.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using GatedDeltaNormsTest = VulkanTest;

constexpr int64_t kScalarExpUlp = 16;

// The layer's conv output rows: [q heads | k heads | v], q scaled by 1/sqrt(Dk), k not.
UlpStats l2_against_cpu(Context& ctx, int rows, int Hk, int Dk, int Dv, uint64_t seed) {
  const size_t KD = size_t(Hk) * Dk, CD = 2 * KD + size_t(Dv);
  const std::vector<float> x = random_floats(size_t(rows) * CD, seed, -2.f, 2.f);
  const float q_scale = 1.f / std::sqrt(float(Dk));
  std::vector<float> cpu = x;
  for (int t = 0; t < rows; ++t)
    for (int h = 0; h < Hk; ++h) {
      l2_norm_scaled(cpu.data() + t * CD + size_t(h) * Dk, Dk, 1e-6f, q_scale);
      l2_norm_scaled(cpu.data() + t * CD + KD + size_t(h) * Dk, Dk, 1e-6f, 1.f);
    }
  Buffer xb = ctx.create_buffer(x.size() * 4);
  ctx.upload(xb, 0, x.data(), x.size() * 4);
  CommandRecorder recorder(ctx);
  record_l2_norm(recorder, xb, rows, CD, 0, Hk, Dk, 1e-6f, q_scale);
  record_l2_norm(recorder, xb, rows, CD, KD, Hk, Dk, 1e-6f, 1.f);
  recorder.submit_and_wait();
  std::vector<float> gpu(x.size());
  ctx.download(xb, 0, gpu.data(), gpu.size() * 4);
  return compare_ulp(gpu, cpu);
}

TEST_F(GatedDeltaNormsTest, L2NormMatchesCpuBitForBit) {
  // Qwen3.5-35B's 16 key heads of 128, 3 rows; one row of 2 heads of 24.
  for (const auto& [rows, Hk, Dk] : {std::tuple{3, 16, 128}, std::tuple{1, 2, 24}}) {
    SCOPED_TRACE("Dk=" + std::to_string(Dk));
    const UlpStats s = l2_against_cpu(context(), rows, Hk, Dk, 2 * Dk, Dk);
    if (exact_device()) {
      EXPECT_EQ(s.differing, 0u) << "max " << s.max_ulp << " ulp";
    } else {
      EXPECT_LE(s.max_ulp, 4);
    }
  }
}

TEST_F(GatedDeltaNormsTest, L2NormOtherHeadSizesWithinTwoUlp) {
  EXPECT_LE(l2_against_cpu(context(), 2, 3, 13, 5, 77).max_ulp, exact_device() ? 2 : 4);
}

TEST_F(GatedDeltaNormsTest, GatedRmsNormWithinScalarExpTolerance) {
  for (const auto& [rows, n] : {std::tuple{2 * 32, 128}, std::tuple{3, 72}}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const std::vector<float> x = random_floats(size_t(rows) * n, n, -2.f, 2.f);
    const std::vector<float> z = random_floats(x.size(), n + 1, -6.f, 6.f);
    const std::vector<float> w = random_floats(n, n + 2, 0.5f, 1.5f);
    std::vector<float> cpu(x.size());
    for (int r = 0; r < rows; ++r)
      rms_norm_gated(x.data() + size_t(r) * n, z.data() + size_t(r) * n, w.data(), n, 1e-6f,
                     cpu.data() + size_t(r) * n);
    Buffer xb = upload(x), zb = upload(z), wb = upload(w);
    CommandRecorder recorder(context());
    record_rms_norm_gated(recorder, xb, zb, wb, xb, rows, n, 1e-6f);  // in place, as the layer
    recorder.submit_and_wait();
    const UlpStats s = compare_ulp(download(xb, x.size()), cpu);
    EXPECT_LE(s.max_ulp, kScalarExpUlp);
    std::printf("[ info     ] rms_norm_gated n=%d: %zu of %zu differ, max %lld ulp\n", n,
                s.differing, x.size(), static_cast<long long>(s.max_ulp));
  }
}

}  // namespace
}  // namespace qmlx::vulkan::testing
