// The gated delta rule on the device against kernels/gated_delta.h's recurrence, outputs and
// state, and the states after each token it keeps on request.
//
// Tolerance: none on lavapipe when every g is 0 (exp(0) = 1 on both sides, so all that is
// left is the CPU's own arithmetic, which the shader repeats lane for lane) and Dk is a
// multiple of 8. Otherwise the
// decay comes from std::exp on the CPU and the device's exp() here, a few ulp apart; each
// token's difference is carried on by the state, so outputs and state are compared relative
// to the largest state magnitude: kRelativeTolerance, with room over what was observed.
#include "backend/vulkan/gated_delta.h"

#include <cmath>
#include <cstring>

#include "kernels/gated_delta.h"
#include "kernels/norms.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using GatedDeltaTest = VulkanTest;

constexpr float kRelativeTolerance = 2e-6f;

struct Case {
  int T, Hk, Hv, Dk, Dv;
  bool zero_decay;
};

struct Outcome {
  UlpStats out, state;
  float max_out_diff = 0, max_state_diff = 0, max_state = 0;
};

Outcome compare_with_cpu(Context& ctx, const Case& c, uint64_t seed) {
  const size_t KD = size_t(c.Hk) * c.Dk, VD = size_t(c.Hv) * c.Dv, CD = 2 * KD + VD;
  std::vector<float> qkv = random_floats(size_t(c.T) * CD, seed, -1.f, 1.f);
  for (int t = 0; t < c.T; ++t)
    for (int h = 0; h < c.Hk; ++h) {
      l2_norm_scaled(qkv.data() + t * CD + size_t(h) * c.Dk, c.Dk, 1e-6f,
                     1.f / std::sqrt(float(c.Dk)));
      l2_norm_scaled(qkv.data() + t * CD + KD + size_t(h) * c.Dk, c.Dk, 1e-6f, 1.f);
    }
  std::vector<float> g = random_floats(size_t(c.T) * c.Hv, seed + 1, -2.f, -0.01f);
  if (c.zero_decay) std::fill(g.begin(), g.end(), 0.f);
  const std::vector<float> beta = random_floats(g.size(), seed + 2, 0.05f, 0.95f);
  const std::vector<float> state = random_floats(VD * c.Dk, seed + 3, -0.5f, 0.5f);
  GatedDeltaInputs in;
  in.T = c.T, in.Hk = c.Hk, in.Hv = c.Hv, in.Dk = c.Dk, in.Dv = c.Dv;
  in.q = qkv.data(), in.k = qkv.data() + KD, in.v = qkv.data() + 2 * KD, in.row_stride = CD;
  in.g = g.data(), in.beta = beta.data();
  std::vector<float> cpu_state = state, cpu(size_t(c.T) * VD);
  gated_delta_recurrent(in, cpu_state.data(), cpu.data());

  DeviceGatedDeltaInputs din;
  din.T = c.T, din.Hk = c.Hk, din.Hv = c.Hv, din.Dk = c.Dk, din.Dv = c.Dv;
  din.q_offset = 0, din.k_offset = KD, din.v_offset = 2 * KD, din.row_stride = CD;
  Buffer qb = ctx.create_buffer(qkv.size() * 4), gb = ctx.create_buffer(g.size() * 4);
  Buffer bb = ctx.create_buffer(beta.size() * 4), sb = ctx.create_buffer(state.size() * 4);
  Buffer ob = ctx.create_buffer(cpu.size() * 4);
  ctx.upload(qb, 0, qkv.data(), qkv.size() * 4);
  ctx.upload(gb, 0, g.data(), g.size() * 4);
  ctx.upload(bb, 0, beta.data(), beta.size() * 4);
  ctx.upload(sb, 0, state.data(), state.size() * 4);
  CommandRecorder recorder(ctx);
  record_gated_delta(recorder, din, qb, gb, bb, sb, ob);
  recorder.submit_and_wait();
  std::vector<float> gpu(cpu.size()), gpu_state(state.size());
  ctx.download(ob, 0, gpu.data(), gpu.size() * 4);
  ctx.download(sb, 0, gpu_state.data(), gpu_state.size() * 4);
  Outcome o{compare_ulp(gpu, cpu), compare_ulp(gpu_state, cpu_state)};
  for (size_t i = 0; i < gpu.size(); ++i)
    o.max_out_diff = std::max(o.max_out_diff, std::abs(gpu[i] - cpu[i]));
  for (size_t i = 0; i < gpu_state.size(); ++i) {
    o.max_state_diff = std::max(o.max_state_diff, std::abs(gpu_state[i] - cpu_state[i]));
    o.max_state = std::max(o.max_state, std::abs(cpu_state[i]));
  }
  return o;
}

TEST_F(GatedDeltaTest, MatchesCpuBitForBitWithoutDecay) {
  // Qwen3.5-35B's head sizes (2 value heads per key head), a prompt chunk and a decode step;
  // and a head size of 24 (vec::dot's 8-wide step after its 16-wide blocks). Head sizes that
  // are not a multiple of 8 end k . q with vec::dot's scalar tail, which GCC vectorizes its own
  // way (rms_norm_test.cpp): those are in the tolerance test only.
  for (const Case& c : {Case{7, 2, 4, 128, 128, true}, Case{1, 2, 4, 128, 128, true},
                        Case{3, 1, 3, 24, 12, true}}) {
    SCOPED_TRACE("T=" + std::to_string(c.T) + " Dk=" + std::to_string(c.Dk));
    const Outcome o = compare_with_cpu(context(), c, c.T * 13 + c.Dk);
    if (exact_device()) {
      EXPECT_EQ(o.out.differing, 0u) << "max " << o.out.max_ulp << " ulp";
      EXPECT_EQ(o.state.differing, 0u) << "max " << o.state.max_ulp << " ulp";
    } else {
      EXPECT_LE(o.max_out_diff, kRelativeTolerance * o.max_state);
      EXPECT_LE(o.max_state_diff, kRelativeTolerance * o.max_state);
    }
  }
}

TEST_F(GatedDeltaTest, WithDecayWithinTolerance) {
  for (const Case& c : {Case{16, 2, 4, 128, 128, false}, Case{3, 1, 3, 20, 12, false}}) {
    SCOPED_TRACE("T=" + std::to_string(c.T) + " Dk=" + std::to_string(c.Dk));
    const Outcome o = compare_with_cpu(context(), c, c.T * 17 + c.Dk);
    EXPECT_LE(o.max_out_diff, kRelativeTolerance * o.max_state);
    EXPECT_LE(o.max_state_diff, kRelativeTolerance * o.max_state);
    std::printf(
        "[ info     ] gated delta T=%d: out max %lld ulp (|diff| %.3g), state max %lld "
        "ulp (|diff| %.3g of max %.3g)\n",
        c.T, static_cast<long long>(o.out.max_ulp), double(o.max_out_diff),
        static_cast<long long>(o.state.max_ulp), double(o.max_state_diff), double(o.max_state));
  }
}

// The states after each token (speculative decoding's history) are those the recurrence leaves
// after that many tokens, and keeping them changes neither output nor final state by a bit.
TEST_F(GatedDeltaTest, HistoryHoldsTheStateAfterEachToken) {
  Context& ctx = context();
  const int T = 4, Hk = 1, Hv = 2, Dk = 24, Dv = 8;
  const size_t KD = size_t(Hk) * Dk, VD = size_t(Hv) * Dv, CD = 2 * KD + VD, S = VD * Dk;
  const std::vector<float> qkv = random_floats(size_t(T) * CD, 3, -0.3f, 0.3f);
  const std::vector<float> g = random_floats(size_t(T) * Hv, 4, -2.f, -0.01f);
  const std::vector<float> beta = random_floats(g.size(), 5, 0.05f, 0.95f);
  const std::vector<float> start = random_floats(S, 6, -0.5f, 0.5f);
  Buffer qb = ctx.create_buffer(qkv.size() * 4), gb = ctx.create_buffer(g.size() * 4);
  Buffer bb = ctx.create_buffer(beta.size() * 4), sb = ctx.create_buffer(S * 4);
  Buffer ob = ctx.create_buffer(size_t(T) * VD * 4), hb = ctx.create_buffer(size_t(T) * S * 4);
  ctx.upload(qb, 0, qkv.data(), qkv.size() * 4);
  ctx.upload(gb, 0, g.data(), g.size() * 4);
  ctx.upload(bb, 0, beta.data(), beta.size() * 4);
  // Tokens [0, rows) from `start`: the output and final state, and the history when kept.
  auto run = [&](int rows, bool keep, std::vector<float>* history) {
    DeviceGatedDeltaInputs in;
    in.T = rows, in.Hk = Hk, in.Hv = Hv, in.Dk = Dk, in.Dv = Dv;
    in.q_offset = 0, in.k_offset = KD, in.v_offset = 2 * KD, in.row_stride = CD;
    ctx.upload(sb, 0, start.data(), S * 4);
    CommandRecorder recorder(ctx);
    record_gated_delta(recorder, in, qb, gb, bb, sb, ob, keep ? &hb : nullptr);
    recorder.submit_and_wait();
    std::vector<float> out(size_t(rows) * VD + S);
    ctx.download(ob, 0, out.data(), size_t(rows) * VD * 4);
    ctx.download(sb, 0, out.data() + size_t(rows) * VD, S * 4);
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
