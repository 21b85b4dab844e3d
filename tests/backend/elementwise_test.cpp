// Element-wise operations on the device against the CPU's (kernels/activations.h, vec::axpy).
//
// Tolerances: none for add, and none for silu_mul over the CPU's full 8-float blocks on
// lavapipe (the shader repeats simd::exp step for step; its fma and division are correctly
// rounded). The scalar tail of silu_mul and all of sigmoid_mul use std::exp on the CPU and the
// device's exp() here; lavapipe's is within a few ulp of glibc's, and 1 / (1 + e) and the
// products add at most two roundings more, so those elements are bounded by kScalarExpUlp.
#include "backend/vulkan/elementwise.h"

#include "kernels/activations.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using ElementwiseTest = VulkanTest;

constexpr int64_t kScalarExpUlp = 8;

enum class Op { kSiluMul, kSigmoidMul, kAdd };

// The CPU's result and the device's for n elements.
std::pair<std::vector<float>, std::vector<float>> run(Context& ctx, Op op, size_t n,
                                                      uint64_t seed) {
  const std::vector<float> a = random_floats(n, seed, -12.f, 12.f);
  const std::vector<float> b = random_floats(n, seed + 1, -3.f, 3.f);
  std::vector<float> cpu = a;
  switch (op) {
    case Op::kSiluMul:
      silu_mul(cpu.data(), b.data(), n);
      break;
    case Op::kSigmoidMul:
      for (size_t i = 0; i < n; ++i) cpu[i] *= sigmoid(b[i]);
      break;
    case Op::kAdd:
      for (size_t i = 0; i < n; ++i) cpu[i] += b[i];
      break;
  }
  Buffer ab = ctx.create_buffer(n * 4), bb = ctx.create_buffer(n * 4);
  ctx.upload(ab, 0, a.data(), n * 4);
  ctx.upload(bb, 0, b.data(), n * 4);
  CommandRecorder recorder(ctx);
  if (op == Op::kSiluMul) record_silu_mul(recorder, ab, bb, n);
  if (op == Op::kSigmoidMul) record_sigmoid_mul(recorder, ab, bb, n);
  if (op == Op::kAdd) record_add(recorder, ab, bb, n);
  recorder.submit_and_wait();
  std::vector<float> gpu(n);
  ctx.download(ab, 0, gpu.data(), n * 4);
  return {cpu, gpu};
}

TEST_F(ElementwiseTest, SiluMulMatchesCpuBitForBitOnFullBlocks) {
  // One row, several rows of a model width (3584: Qwen3.5-0.8B's MLP), and widths that are not
  // a multiple of the 64-invocation workgroup.
  for (const size_t n : {size_t(8), size_t(64), size_t(1000), size_t(3) * 3584, size_t(4104)}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const auto [cpu, gpu] = run(context(), Op::kSiluMul, n, n);
    const UlpStats s = compare_ulp(gpu, cpu);
    if (exact_device()) {
      EXPECT_EQ(s.differing, 0u) << "max " << s.max_ulp << " ulp";
    } else {
      EXPECT_LE(s.max_ulp, 4);
    }
  }
}

TEST_F(ElementwiseTest, SiluMulTailWithinScalarExpTolerance) {
  for (const size_t n : {size_t(1), size_t(7), size_t(13), size_t(1001)}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const auto [cpu, gpu] = run(context(), Op::kSiluMul, n, 5 * n);
    const size_t blocks = n & ~size_t(7);
    const std::vector<float> cpu_blocks(cpu.begin(), cpu.begin() + blocks);
    const std::vector<float> gpu_blocks(gpu.begin(), gpu.begin() + blocks);
    if (exact_device()) {
      EXPECT_EQ(compare_ulp(gpu_blocks, cpu_blocks).differing, 0u);
    }
    EXPECT_LE(compare_ulp(gpu, cpu).max_ulp, kScalarExpUlp);
  }
}

TEST_F(ElementwiseTest, SigmoidMulWithinScalarExpTolerance) {
  for (const size_t n : {size_t(5), size_t(256), size_t(2) * 4096 + 3}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const auto [cpu, gpu] = run(context(), Op::kSigmoidMul, n, 3 * n);
    const UlpStats s = compare_ulp(gpu, cpu);
    EXPECT_LE(s.max_ulp, kScalarExpUlp);
    std::printf("[ info     ] sigmoid_mul n=%zu: %zu of %zu differ, max %lld ulp\n", n, s.differing,
                n, static_cast<long long>(s.max_ulp));
  }
}

TEST_F(ElementwiseTest, AddIsExact) {
  for (const size_t n : {size_t(3), size_t(1024), size_t(3) * 2048 + 5}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const auto [cpu, gpu] = run(context(), Op::kAdd, n, 11 * n);
    EXPECT_EQ(compare_ulp(gpu, cpu).differing, 0u);
  }
}

}  // namespace
}  // namespace qmlx::vulkan::testing
