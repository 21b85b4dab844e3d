// RMSNorm on the device against kernels/norms.h's rms_norm.
//
// Tolerance: none on lavapipe for widths that are multiples of 8 (all model widths): the shader
// follows the CPU's order lane for lane, and lavapipe's fma, division and square root are
// correctly rounded like the CPU's. Other devices may round division and square root within
// the few ulp Vulkan allows (2.5 and 3 ulp), so there a row may differ by up to 4 ulp. For
// other widths the CPU's last n % 8 squares are whatever GCC's vectorizer makes of the scalar
// `s += a * b` (today: four products rounded then added, the rest fused), while the shader fuses
// each; the sums then differ by rounding of at most 7 terms, i.e. at most 2 ulp in the output.
#include "backend/vulkan/rms_norm.h"

#include "kernels/norms.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using RmsNormTest = VulkanTest;

struct Result {
  int64_t max_ulp = 0;
  size_t differing = 0;
};

Result compare_with_cpu(Context& ctx, int rows, int n, bool plus_one, bool in_place,
                        uint64_t seed) {
  const std::vector<float> x = random_floats(size_t(rows) * n, seed, -2.f, 2.f);
  const std::vector<float> w = random_floats(n, seed + 1, plus_one ? -0.5f : 0.5f, 1.5f);
  const float eps = 1e-6f;
  std::vector<float> cpu(x.size()), folded = w;
  // The CPU folds the + 1 of zero-centred weights in at load (model/weight_loader.cpp).
  if (plus_one)
    for (float& v : folded) v += 1.f;
  for (int r = 0; r < rows; ++r)
    rms_norm(x.data() + size_t(r) * n, folded.data(), n, eps, cpu.data() + size_t(r) * n);

  Buffer xb = ctx.create_buffer(x.size() * 4), wb = ctx.create_buffer(w.size() * 4);
  ctx.upload(xb, 0, x.data(), x.size() * 4);
  ctx.upload(wb, 0, w.data(), w.size() * 4);
  Buffer yb = in_place ? Buffer() : ctx.create_buffer(x.size() * 4);
  const Buffer& out = in_place ? xb : yb;
  CommandRecorder recorder(ctx);
  record_rms_norm(recorder, xb, wb, out, rows, n, eps, plus_one);
  recorder.submit_and_wait();
  std::vector<float> gpu(x.size());
  ctx.download(out, 0, gpu.data(), gpu.size() * 4);
  Result result;
  for (size_t i = 0; i < gpu.size(); ++i) {
    const int64_t d = ulp_distance(gpu[i], cpu[i]);
    result.max_ulp = std::max(result.max_ulp, d);
    result.differing += d != 0;
  }
  return result;
}

TEST_F(RmsNormTest, MatchesCpuBitForBitOnModelWidths) {
  for (const int n : {8, 16, 24, 64, 1000, 2048, 4096, 5120})
    for (const bool plus_one : {false, true}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " plus_one=" + std::to_string(plus_one));
      const Result r = compare_with_cpu(context(), 3, n, plus_one, false, n);
      if (exact_device()) {
        EXPECT_EQ(r.differing, 0u) << "max " << r.max_ulp << " ulp";
      } else {
        EXPECT_LE(r.max_ulp, 4);
      }
    }
}

TEST_F(RmsNormTest, OtherWidthsWithinTwoUlp) {
  for (const int n : {1, 3, 7, 13, 100, 1001, 4099}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const Result r = compare_with_cpu(context(), 2, n, false, false, 7 * n);
    EXPECT_LE(r.max_ulp, exact_device() ? 2 : 4);
  }
}

TEST_F(RmsNormTest, InPlaceGivesTheSameResult) {
  const Result r = compare_with_cpu(context(), 4, 2048, true, true, 99);
  if (exact_device()) {
    EXPECT_EQ(r.differing, 0u);
  } else {
    EXPECT_LE(r.max_ulp, 4);
  }
}

}  // namespace
}  // namespace qmlx::vulkan::testing
