// GELU on the device against kernels/activations.h.
//
// gelu_tanh: bit-identical on lavapipe (the shader repeats simd::exp and the CPU's gelu8 step
// for step). Elsewhere (an unfused fma, division within 2.5 ulp) e^(-2y)'s argument, up to
// about 40 in magnitude, carries the rounding of its fma, which the exponential turns into a
// relative error of up to 40 * 2^-24: within 4e-6 relative where it matters, plus 1e-7
// absolute for the far negative tail (x < -5), whose outputs below 1e-6 are the exponential of
// an argument past 40 and carry proportionally more. gelu_erf: GLSL has no erf; the
// shader's fit (gelu.glsl) agrees with glibc's erff to about 1.2e-7 relative in erfc, so the
// result is within 2e-7 absolute plus 4e-7 relative of the CPU's (measured on lavapipe: well
// inside it). Inputs cover [-12, 12]: the erf tails, where the CPU's value is 0 or x, included.
#include "backend/vulkan/gelu.h"

#include <cmath>

#include "kernels/activations.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using GeluTest = VulkanTest;

std::vector<float> on_device(Context& ctx, Gelu kind, const std::vector<float>& x) {
  Buffer b = ctx.create_buffer(x.size() * 4);
  ctx.upload(b, 0, x.data(), x.size() * 4);
  CommandRecorder recorder(ctx);
  record_gelu(recorder, kind, b, x.size());
  recorder.submit_and_wait();
  std::vector<float> out(x.size());
  ctx.download(b, 0, out.data(), out.size() * 4);
  return out;
}

TEST_F(GeluTest, TanhMatchesCpu) {
  for (const size_t n : {size_t(1), size_t(13), size_t(4304 * 3 + 5), size_t(70000)}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const std::vector<float> x = random_floats(n, n, -12.f, 12.f);
    std::vector<float> cpu = x;
    gelu_tanh_in_place(cpu.data(), cpu.size());
    const std::vector<float> gpu = on_device(context(), Gelu::kTanh, x);
    const UlpStats r = compare_ulp(gpu, cpu);
    if (exact_device()) {
      EXPECT_EQ(r.differing, 0u) << "max " << r.max_ulp << " ulp";
    } else {
      for (size_t i = 0; i < x.size(); ++i)
        EXPECT_LE(std::abs(gpu[i] - cpu[i]), 1e-7f + 4e-6f * std::abs(cpu[i])) << "x=" << x[i];
    }
  }
}

TEST_F(GeluTest, ErfWithinItsFitOfTheCpu) {
  std::vector<float> x = random_floats(50000, 5, -12.f, 12.f);
  for (float v : {0.f, -0.f, 1e-30f, -1e-30f, 1e-4f, -1e-4f, 0.5f, -0.5f, 3.f, -3.f, 9.f, -9.f})
    x.push_back(v);
  std::vector<float> cpu = x;
  gelu_erf_in_place(cpu.data(), cpu.size());
  const std::vector<float> gpu = on_device(context(), Gelu::kErf, x);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double err = std::abs(double(gpu[i]) - cpu[i]);
    EXPECT_LE(err, 2e-7 + 4e-7 * std::abs(cpu[i])) << "x=" << x[i];
    worst = std::max(worst, err / (2e-7 + 4e-7 * std::abs(cpu[i])));
  }
  RecordProperty("worst_fraction_of_tolerance", std::to_string(worst));
}

}  // namespace
}  // namespace qmlx::vulkan::testing
