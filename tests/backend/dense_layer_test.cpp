// One whole Qwen3-style dense decoder layer recorded on the device, one command buffer and one
// submission per step (a prompt of a few rows, then a decode row), against the same composition
// of the CPU kernels, on random weights (bf16, and MLX affine 4-bit). Both sides are built here
// from the kernels' and the backend's public functions: kernels and backends know no model.
//
//   h = x + o_proj(attention(rope(k_norm(k_proj(n))), rope(q_norm(q_proj(n))), v_proj(n)))
//       with n = input_norm(x), K/V appended to an f32 cache at the rows' positions
//   y = h + down(silu(gate(m)) * up(m)) with m = post_attention_norm(h)
//
// Tolerance: each operation is tested alone against its CPU kernel; composed, what differs is
// what those tests bound. The device's matmul follows the CPU's generated-row arithmetic, while
// the CPU computes prompt rows as one fma chain per output (a different order: differences of a
// few ulp per output, more for affine weights, whose generated rows the CPU also rounds to int16
// first, a relative 2^-16 per activation). Attention rows past the first 8 keys, the scalar silu
// tail and RMSNorm agree to rounding too. These pass through two residual blocks whose norms
// renormalise them; the layer's output must lie within a tolerance x max|y| of the CPU's:
// 1e-5 for bf16 weights (observed 8e-7) and 2e-4 for affine 4-bit ones, whose decode row the
// CPU multiplies with int16-rounded activations (observed 3e-5, twice 2^-16). Printed per step,
// with the dispatches of the step's one submission (19 for this layer).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "backend/vulkan/attention.h"
#include "backend/vulkan/copy.h"
#include "backend/vulkan/elementwise.h"
#include "backend/vulkan/matmul.h"
#include "backend/vulkan/rms_norm.h"
#include "backend/vulkan/rope.h"
#include "host_matrix.h"
#include "kernels/activations.h"
#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/norms.h"
#include "kernels/rope.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using DenseLayerTest = VulkanTest;

// A Qwen3-0.6B layer scaled down: hidden 256, 4 query heads and 2 KV heads of 64, MLP 512.
struct Shape {
  int H = 256, Nh = 4, Nkv = 2, D = 64, I = 512;
  int kv_rows = 16;
  float eps = 1e-6f;
  double theta = 1e6;
};

struct LayerWeights {
  HostMatrix q, k, v, o, gate, up, down;
  std::vector<float> input_norm, post_norm, q_norm, k_norm;
};

LayerWeights random_layer(const Shape& s, bool affine, uint64_t seed) {
  auto matrix = [&](int rows, int cols, uint64_t n) {
    // Scaled so that activations stay of order one through the layer.
    if (affine) return affine_matrix(4, 64, ScalarType::kBF16, rows, cols, seed + n, 0.5f);
    return float_matrix(WeightFormat::kBF16, rows, cols, seed + n, 4.f / std::sqrt(float(cols)));
  };
  LayerWeights w;
  w.q = matrix(s.Nh * s.D, s.H, 1);
  w.k = matrix(s.Nkv * s.D, s.H, 2);
  w.v = matrix(s.Nkv * s.D, s.H, 3);
  w.o = matrix(s.H, s.Nh * s.D, 4);
  w.gate = matrix(s.I, s.H, 5);
  w.up = matrix(s.I, s.H, 6);
  w.down = matrix(s.H, s.I, 7);
  w.input_norm = random_floats(s.H, seed + 8, 0.5f, 1.5f);
  w.post_norm = random_floats(s.H, seed + 9, 0.5f, 1.5f);
  w.q_norm = random_floats(s.D, seed + 10, 0.5f, 1.5f);
  w.k_norm = random_floats(s.D, seed + 11, 0.5f, 1.5f);
  return w;
}

// The layer on the CPU kernels, its K/V cache carried from step to step.
class CpuLayer {
 public:
  CpuLayer(const Shape& s, const LayerWeights& w)
      : s_(s), w_(w), k_cache_(size_t(s.kv_rows) * s.Nkv * s.D), v_cache_(k_cache_.size()) {}

  // x: [T][H] rows at positions p0.., updated in place.
  void step(std::vector<float>& x, int T, int p0, bool generated) {
    const int H = s_.H, QD = s_.Nh * s_.D, KD = s_.Nkv * s_.D, G = generated ? T : 0;
    std::vector<float> n(size_t(T) * H), q(size_t(T) * QD), k(size_t(T) * KD), v(k.size());
    for (int t = 0; t < T; ++t) rms_norm(&x[t * H], w_.input_norm.data(), H, s_.eps, &n[t * H]);
    matmul(n.data(), T, w_.q.w, q.data(), G);
    matmul(n.data(), T, w_.k.w, k.data(), G);
    matmul(n.data(), T, w_.v.w, v.data(), G);
    for (int r = 0; r < T * s_.Nh; ++r)
      rms_norm(&q[r * s_.D], w_.q_norm.data(), s_.D, s_.eps, &q[r * s_.D]);
    for (int r = 0; r < T * s_.Nkv; ++r)
      rms_norm(&k[r * s_.D], w_.k_norm.data(), s_.D, s_.eps, &k[r * s_.D]);
    for (int t = 0; t < T; ++t) {
      const RopeAngles a = rope_angles(p0 + t, s_.D, s_.theta);
      apply_rope(&q[t * QD], s_.Nh, s_.D, s_.D, a);
      apply_rope(&k[t * KD], s_.Nkv, s_.D, s_.D, a);
      std::copy_n(&k[t * KD], KD, &k_cache_[size_t(p0 + t) * KD]);
      std::copy_n(&v[t * KD], KD, &v_cache_[size_t(p0 + t) * KD]);
    }
    AttentionShape as;
    as.T = T;
    as.Nh = s_.Nh;
    as.Nkv = s_.Nkv;
    as.D = s_.D;
    as.q_pos0 = p0;
    as.scale = 1.f / std::sqrt(float(s_.D));
    as.generated = generated;
    std::vector<float> attn(q.size()), o(size_t(T) * H);
    attention(as, q.data(), k_cache_.data(), v_cache_.data(), KvType::kF32, attn.data());
    matmul(attn.data(), T, w_.o.w, o.data(), G);
    for (size_t i = 0; i < o.size(); ++i) x[i] += o[i];
    for (int t = 0; t < T; ++t) rms_norm(&x[t * H], w_.post_norm.data(), H, s_.eps, &n[t * H]);
    std::vector<float> gate(size_t(T) * s_.I), up(gate.size()), down(o.size());
    matmul(n.data(), T, w_.gate.w, gate.data(), G);
    matmul(n.data(), T, w_.up.w, up.data(), G);
    silu_mul(gate.data(), up.data(), gate.size());
    matmul(gate.data(), T, w_.down.w, down.data(), G);
    for (size_t i = 0; i < down.size(); ++i) x[i] += down[i];
  }

 private:
  Shape s_;
  const LayerWeights& w_;
  std::vector<float> k_cache_, v_cache_;
};

// The same layer recorded on the device: weights uploaded once, activations in buffers sized
// for the longest step, the K/V cache carried from step to step.
class DeviceLayer {
 public:
  DeviceLayer(Context& ctx, const Shape& s, const LayerWeights& w, int max_rows)
      : ctx_(ctx),
        s_(s),
        q_(upload_matrix(ctx, w.q.w)),
        k_(upload_matrix(ctx, w.k.w)),
        v_(upload_matrix(ctx, w.v.w)),
        o_(upload_matrix(ctx, w.o.w)),
        gate_(upload_matrix(ctx, w.gate.w)),
        up_(upload_matrix(ctx, w.up.w)),
        down_(upload_matrix(ctx, w.down.w)),
        input_norm_(floats(w.input_norm)),
        post_norm_(floats(w.post_norm)),
        q_norm_(floats(w.q_norm)),
        k_norm_(floats(w.k_norm)),
        rope_(upload_rope_table(ctx, s.kv_rows, s.D, s.theta)) {
    const size_t T = size_t(max_rows), QD = size_t(s.Nh) * s.D, KD = size_t(s.Nkv) * s.D;
    x_ = ctx.create_buffer(T * s.H * 4);
    n_ = ctx.create_buffer(T * s.H * 4);
    o_out_ = ctx.create_buffer(T * s.H * 4);
    q_out_ = ctx.create_buffer(T * QD * 4);
    k_out_ = ctx.create_buffer(T * KD * 4);
    v_out_ = ctx.create_buffer(T * KD * 4);
    attn_ = ctx.create_buffer(T * QD * 4);
    gate_out_ = ctx.create_buffer(T * s.I * 4);
    up_out_ = ctx.create_buffer(T * s.I * 4);
    positions_ = ctx.create_buffer(T * 4);
    k_cache_ = ctx.create_buffer(size_t(s.kv_rows) * KD * 4);
    v_cache_ = ctx.create_buffer(size_t(s.kv_rows) * KD * 4);
    DeviceAttentionShape as;
    as.R = max_rows;
    as.Nh = s.Nh;
    as.kv_rows = s.kv_rows;
    scratch_ = ctx.create_buffer(attention_scratch_bytes(as));
  }

  // Uploads x and the positions, records the layer, submits once, reads x back; returns the
  // dispatches recorded.
  size_t step(std::vector<float>& x, int T, int p0, bool generated) {
    const int H = s_.H, KD = s_.Nkv * s_.D;
    std::vector<int32_t> positions(T);
    for (int t = 0; t < T; ++t) positions[t] = p0 + t;
    ctx_.upload(x_, 0, x.data(), x.size() * 4);
    ctx_.upload(positions_, 0, positions.data(), positions.size() * 4);
    CommandRecorder r(ctx_);
    record_rms_norm(r, x_, input_norm_, n_, T, H, s_.eps, false);
    record_matmul(r, q_, n_, T, q_out_);
    record_matmul(r, k_, n_, T, k_out_);
    record_matmul(r, v_, n_, T, v_out_);
    record_rms_norm(r, q_out_, q_norm_, q_out_, T * s_.Nh, s_.D, s_.eps, false);
    record_rms_norm(r, k_out_, k_norm_, k_out_, T * s_.Nkv, s_.D, s_.eps, false);
    record_rope(r, q_out_, positions_, rope_, T, s_.Nh, s_.D);
    record_rope(r, k_out_, positions_, rope_, T, s_.Nkv, s_.D);
    // The K/V append: the rows' K and V heads at their positions of the f32 cache.
    const size_t row_bytes = size_t(KD) * 4;
    record_copy(r, k_out_, 0, k_cache_, size_t(p0) * row_bytes, size_t(T) * row_bytes);
    record_copy(r, v_out_, 0, v_cache_, size_t(p0) * row_bytes, size_t(T) * row_bytes);
    DeviceAttentionShape as;
    as.R = T;
    as.Nh = s_.Nh;
    as.Nkv = s_.Nkv;
    as.D = s_.D;
    as.kv_rows = s_.kv_rows;
    as.scale = 1.f / std::sqrt(float(s_.D));
    as.generated = generated;
    record_attention(r, as, q_out_, positions_, k_cache_, v_cache_, KvType::kF32, attn_, &scratch_);
    record_matmul(r, o_, attn_, T, o_out_);
    record_add(r, x_, o_out_, size_t(T) * H);
    record_rms_norm(r, x_, post_norm_, n_, T, H, s_.eps, false);
    record_matmul(r, gate_, n_, T, gate_out_);
    record_matmul(r, up_, n_, T, up_out_);
    record_silu_mul(r, gate_out_, up_out_, size_t(T) * s_.I);
    record_matmul(r, down_, gate_out_, T, o_out_);
    record_add(r, x_, o_out_, size_t(T) * H);
    const size_t dispatches = r.dispatch_count();
    r.submit_and_wait();
    ctx_.download(x_, 0, x.data(), x.size() * 4);
    return dispatches;
  }

 private:
  Buffer floats(const std::vector<float>& v) {
    Buffer b = ctx_.create_buffer(v.size() * 4);
    ctx_.upload(b, 0, v.data(), v.size() * 4);
    return b;
  }

  Context& ctx_;
  Shape s_;
  DeviceMatrix q_, k_, v_, o_, gate_, up_, down_;
  Buffer input_norm_, post_norm_, q_norm_, k_norm_;
  RopeTable rope_;
  Buffer x_, n_, o_out_, q_out_, k_out_, v_out_, attn_, gate_out_, up_out_, positions_;
  Buffer k_cache_, v_cache_, scratch_;
};

// max |a - b| / max |b|.
double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return diff / scale;
}

void run_layer(Context& ctx, bool affine, double tolerance) {
  const Shape s;
  const LayerWeights w = random_layer(s, affine, affine ? 100 : 200);
  const int prompt = 5;
  CpuLayer cpu(s, w);
  DeviceLayer device(ctx, s, w, prompt);
  // A prompt of 5 rows at positions 0-4, then a decode row at position 5.
  struct Step {
    int T, p0;
    bool generated;
  };
  for (const Step step : {Step{prompt, 0, false}, Step{1, prompt, true}}) {
    SCOPED_TRACE(std::string(step.generated ? "decode" : "prompt") + " step");
    const std::vector<float> x = random_floats(size_t(step.T) * s.H, 7 + step.p0, -1.f, 1.f);
    std::vector<float> on_cpu = x, on_device = x;
    cpu.step(on_cpu, step.T, step.p0, step.generated);
    const size_t dispatches = device.step(on_device, step.T, step.p0, step.generated);
    const double rel = relative_difference(on_device, on_cpu);
    const UlpStats u = compare_ulp(on_device, on_cpu);
    std::printf(
        "[ info     ] %s %s step, %d rows: 1 submission, %zu dispatches; %zu of %zu outputs "
        "differ, max %.3g of max|y|\n",
        affine ? "affine 4-bit" : "bf16", step.generated ? "decode" : "prompt", step.T, dispatches,
        u.differing, on_cpu.size(), rel);
    EXPECT_LE(rel, tolerance);
  }
}

TEST_F(DenseLayerTest, Bf16LayerMatchesCpuComposition) { run_layer(context(), false, 1e-5); }

TEST_F(DenseLayerTest, Affine4BitLayerMatchesCpuComposition) { run_layer(context(), true, 2e-4); }

}  // namespace
}  // namespace qmlx::vulkan::testing
