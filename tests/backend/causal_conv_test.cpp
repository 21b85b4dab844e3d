// The causal conv + SiLU on the device against kernels/causal_conv.h, outputs and carried state,
// and the states after each row it keeps on request.
//
// Tolerance: none on lavapipe for channel counts that are a multiple of 8 (the sum is the CPU's
// fma chain, silu its simd::exp form); the state is a copy and always exact. The last C % 8
// channels use the CPU's scalar silu (std::exp): within kScalarExpUlp (elementwise_test.cpp).
#include <cstring>
#include <tuple>

#include "backend/vulkan/causal_conv.h"

#include "kernels/causal_conv.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using CausalConvTest = VulkanTest;

constexpr int64_t kScalarExpUlp = 8;

struct Outcome {
  UlpStats out, vector_channels, state;
};

Outcome compare_with_cpu(Context& ctx, int T, int C, int K, size_t stride, uint64_t seed) {
  const std::vector<float> x = random_floats(size_t(T) * stride, seed, -3.f, 3.f);
  const std::vector<float> w = random_floats(size_t(K) * C, seed + 1, -1.f, 1.f);
  const std::vector<float> state = random_floats(size_t(K - 1) * C, seed + 2, -3.f, 3.f);
  std::vector<float> cpu_state = state, cpu(size_t(T) * C);
  causal_conv1d_silu(x.data(), stride, T, C, K, w.data(), cpu_state.data(), cpu.data());

  Buffer xb = ctx.create_buffer(x.size() * 4), wb = ctx.create_buffer(w.size() * 4);
  Buffer sb = ctx.create_buffer(state.size() * 4), ob = ctx.create_buffer(cpu.size() * 4);
  ctx.upload(xb, 0, x.data(), x.size() * 4);
  ctx.upload(wb, 0, w.data(), w.size() * 4);
  ctx.upload(sb, 0, state.data(), state.size() * 4);
  CommandRecorder recorder(ctx);
  record_causal_conv1d_silu(recorder, xb, stride, T, C, K, wb, sb, ob);
  recorder.submit_and_wait();
  std::vector<float> gpu(cpu.size()), gpu_state(state.size());
  ctx.download(ob, 0, gpu.data(), gpu.size() * 4);
  ctx.download(sb, 0, gpu_state.data(), gpu_state.size() * 4);
  Outcome o{compare_ulp(gpu, cpu), {}, compare_ulp(gpu_state, cpu_state)};
  std::vector<float> gv, cv;
  for (size_t i = 0; i < gpu.size(); ++i)
    if (int(i % C) < (C & ~7)) {
      gv.push_back(gpu[i]);
      cv.push_back(cpu[i]);
    }
  o.vector_channels = compare_ulp(gv, cv);
  return o;
}

TEST_F(CausalConvTest, MatchesCpuBitForBitOnChannelBlocksOf8) {
  // A prefill chunk and a decode step over 200 channels (not a multiple of 64), reading the
  // qkv rows of a wider projection (stride > C); two rows, fewer than K - 1, keep part of the
  // old state.
  for (const auto& [T, C, stride] :
       {std::tuple{9, 200, 232}, std::tuple{1, 200, 200}, std::tuple{2, 64, 64}}) {
    SCOPED_TRACE("T=" + std::to_string(T) + " C=" + std::to_string(C));
    const Outcome o = compare_with_cpu(context(), T, C, 4, size_t(stride), T * 7 + C);
    EXPECT_EQ(o.state.differing, 0u);
    if (exact_device()) {
      EXPECT_EQ(o.out.differing, 0u) << "max " << o.out.max_ulp << " ulp";
    } else {
      EXPECT_LE(o.out.max_ulp, 4);
    }
  }
}

TEST_F(CausalConvTest, TailChannelsWithinScalarExpTolerance) {
  const Outcome o = compare_with_cpu(context(), 5, 203, 4, 203, 3);
  EXPECT_EQ(o.state.differing, 0u);
  if (exact_device()) {
    EXPECT_EQ(o.vector_channels.differing, 0u);
  }
  EXPECT_LE(o.out.max_ulp, kScalarExpUlp);
}

// The states after each row (speculative decoding's history) are those the conv leaves after
// that many rows, and keeping them changes neither output nor final state by a bit.
TEST_F(CausalConvTest, HistoryHoldsTheStateAfterEachRow) {
  Context& ctx = context();
  const int T = 4, C = 72, K = 4;
  const size_t stride = 80, S = size_t(K - 1) * C;
  const std::vector<float> x = random_floats(size_t(T) * stride, 8, -3.f, 3.f);
  const std::vector<float> w = random_floats(size_t(K) * C, 9, -1.f, 1.f);
  const std::vector<float> start = random_floats(S, 10, -3.f, 3.f);
  Buffer xb = ctx.create_buffer(x.size() * 4), wb = ctx.create_buffer(w.size() * 4);
  Buffer sb = ctx.create_buffer(S * 4), ob = ctx.create_buffer(size_t(T) * C * 4);
  Buffer hb = ctx.create_buffer(size_t(T) * S * 4);
  ctx.upload(xb, 0, x.data(), x.size() * 4);
  ctx.upload(wb, 0, w.data(), w.size() * 4);
  // Rows [0, rows) from `start`: the output and final state, and the history when kept.
  auto run = [&](int rows, bool keep, std::vector<float>* history) {
    ctx.upload(sb, 0, start.data(), S * 4);
    CommandRecorder recorder(ctx);
    record_causal_conv1d_silu(recorder, xb, stride, rows, C, K, wb, sb, ob, keep ? &hb : nullptr);
    recorder.submit_and_wait();
    std::vector<float> out(size_t(rows) * C + S);
    ctx.download(ob, 0, out.data(), size_t(rows) * C * 4);
    ctx.download(sb, 0, out.data() + size_t(rows) * C, S * 4);
    if (history) {
      history->resize(size_t(rows) * S);
      ctx.download(hb, 0, history->data(), history->size() * 4);
    }
    return out;
  };
  expect_history_is_each_prefix_state(run, T, S);
}

}  // namespace
}  // namespace qmlx::vulkan::testing
