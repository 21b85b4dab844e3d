// LayerNorm with weight and bias on the device against kernels/norms.h's layer_norm.
//
// Tolerance: none on lavapipe (correctly rounded fma, division and square root) against the
// optimised build's CPU kernel: the shader follows the order GCC compiles the CPU loop in at
// -O2 (layer_norm.glsl). The sanitizer build's -O1 neither vectorizes nor splits that loop the
// same way, and other devices may round division and square root within the few ulp Vulkan
// allows; there every output is within 1e-6 absolute (outputs that cancel to near zero against
// the bias) plus 8e-7 relative of the CPU's.
#include "backend/vulkan/layer_norm.h"

#include <cmath>

#include "kernels/norms.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using LayerNormTest = VulkanTest;

UlpStats run(Context& ctx, int rows, int n, uint64_t seed, float offset) {
  std::vector<float> x = random_floats(size_t(rows) * n, seed, -2.f, 2.f);
  for (float& v : x) v += offset;  // a mean far from zero: the two-pass variance matters
  const std::vector<float> w = random_floats(n, seed + 1, 0.5f, 1.5f);
  const std::vector<float> b = random_floats(n, seed + 2, -0.5f, 0.5f);
  const float eps = 1e-6f;
  std::vector<float> cpu(x.size());
  for (int r = 0; r < rows; ++r)
    layer_norm(&x[size_t(r) * n], w.data(), b.data(), size_t(n), eps, &cpu[size_t(r) * n]);
  Buffer xb = ctx.create_buffer(x.size() * 4), wb = ctx.create_buffer(w.size() * 4),
         bb = ctx.create_buffer(b.size() * 4), yb = ctx.create_buffer(x.size() * 4);
  ctx.upload(xb, 0, x.data(), x.size() * 4);
  ctx.upload(wb, 0, w.data(), w.size() * 4);
  ctx.upload(bb, 0, b.data(), b.size() * 4);
  CommandRecorder recorder(ctx);
  record_layer_norm(recorder, xb, wb, bb, yb, rows, n, eps);
  recorder.submit_and_wait();
  std::vector<float> gpu(x.size());
  ctx.download(yb, 0, gpu.data(), gpu.size() * 4);
  for (size_t i = 0; i < gpu.size(); ++i)
    EXPECT_NEAR(gpu[i], cpu[i], 1e-6f + 8e-7f * std::abs(cpu[i]));
  return compare_ulp(gpu, cpu);
}

TEST_F(LayerNormTest, MatchesCpu) {
  for (const int n : {1, 7, 8, 16, 72, 1000, 1152, 4608})
    for (const float offset : {0.f, 30.f}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " offset=" + std::to_string(offset));
      const UlpStats r = run(context(), 5, n, uint64_t(n) * 3 + uint64_t(offset), offset);
#ifndef __SANITIZE_ADDRESS__
      if (exact_device()) {
        EXPECT_EQ(r.differing, 0u) << "max " << r.max_ulp << " ulp";
      }
#else
      (void)r;
#endif
    }
}

}  // namespace
}  // namespace qmlx::vulkan::testing
