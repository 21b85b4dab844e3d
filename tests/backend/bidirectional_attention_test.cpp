// Unmasked attention on the device against kernels/bidirectional_attention.h, over rows in the
// vision tower's fused [q | k | v] layout (one buffer, a row stride of 3 * heads * D) and over
// separate buffers.
//
// Tolerance: the CPU sums its scores and P V in its GEMM's order and exponentiates with
// simd::exp; the shader sums in chunks of 64 keys with an online softmax and the device's exp.
// Each output is a convex combination of V values in [-1, 1], and both sides are within a few
// ulp per term of the exact value, so they agree within 2e-6 absolute for T up to a few thousand
// (measured on lavapipe: about 3e-7). The device's own result is deterministic: two runs give
// the same bits.
#include "backend/vulkan/bidirectional_attention.h"

#include <cmath>

#include "kernels/bidirectional_attention.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using BidirectionalAttentionTest = VulkanTest;

std::vector<float> run_fused(Context& ctx, int T, int heads, int D, const std::vector<float>& qkv) {
  const size_t H = size_t(heads) * D;
  Buffer in = ctx.create_buffer(qkv.size() * 4), out = ctx.create_buffer(size_t(T) * H * 4);
  ctx.upload(in, 0, qkv.data(), qkv.size() * 4);
  const BidirectionalShape s{T, heads, D, 1.f / std::sqrt(float(D))};
  CommandRecorder recorder(ctx);
  record_bidirectional_attention(recorder, s, {&in, 0, 3 * H}, {&in, H, 3 * H}, {&in, 2 * H, 3 * H},
                                 {&out, 0, H});
  recorder.submit_and_wait();
  std::vector<float> result(size_t(T) * H);
  ctx.download(out, 0, result.data(), result.size() * 4);
  return result;
}

TEST_F(BidirectionalAttentionTest, MatchesCpuAndIsDeterministic) {
  for (const auto& [T, heads, D] :
       {std::tuple{1, 1, 8}, std::tuple{5, 2, 16}, std::tuple{64, 3, 72}, std::tuple{130, 2, 72},
        std::tuple{300, 4, 128}, std::tuple{1000, 2, 72}}) {
    SCOPED_TRACE("T=" + std::to_string(T) + " heads=" + std::to_string(heads) +
                 " D=" + std::to_string(D));
    const size_t H = size_t(heads) * D;
    std::vector<float> qkv = random_floats(size_t(T) * 3 * H, uint64_t(T * heads * D));
    for (float& v : qkv) v *= 2.f;  // peaked enough scores for the softmax's maximum to matter
    std::vector<float> cpu(size_t(T) * H);
    const BidirectionalAttentionShape shape{T, heads, D, 3 * H, 1.f / std::sqrt(float(D))};
    bidirectional_attention(shape, qkv.data(), qkv.data() + H, qkv.data() + 2 * H, cpu.data());
    const std::vector<float> gpu = run_fused(context(), T, heads, D, qkv);
    float worst = 0;
    for (size_t i = 0; i < cpu.size(); ++i) worst = std::max(worst, std::abs(gpu[i] - cpu[i]));
    EXPECT_LE(worst, 2e-6f);
    EXPECT_EQ(compare_ulp(run_fused(context(), T, heads, D, qkv), gpu).differing, 0u);
  }
}

TEST_F(BidirectionalAttentionTest, RefusesHeadsWiderThan128) {
  Buffer b = context().create_buffer(4096);
  std::string why;
  EXPECT_FALSE(bidirectional_attention_fits(context(), {2, 1, 136, 1.f}, {&b, 0, 136}, {&b, 0, 136},
                                            {&b, 0, 136}, {&b, 0, 136}, &why));
  EXPECT_NE(why.find("head dimension"), std::string::npos) << why;
}

}  // namespace
}  // namespace qmlx::vulkan::testing
