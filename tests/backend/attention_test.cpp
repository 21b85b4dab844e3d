// Causal GQA attention on the device against kernels/attention.h, for every K/V row type and
// both row kinds.
//
// Tolerance: none on lavapipe for rows where the CPU calls no std::exp (generated rows with
// (P + 1) % 8 == 0; prompt rows below position 64): the shader repeats the CPU's sums and
// simd::exp exactly. Where the CPU does call std::exp (a generated row's last (P + 1) % 8
// scores, a prompt row's rescaling when its maximum grows in a later block) the device's exp()
// differs from glibc's by a few ulp, which moves the softmax weights, and so each output, by a
// few ulp relative to the row's largest value: kRelativeTolerance of max |v| bounds it with
// room (the outputs are weighted means of V rows, so an ulp count of a near-zero output would
// say nothing).
#include "backend/vulkan/attention.h"

#include <cmath>

#include "kernels/attention.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using AttentionTest = VulkanTest;

constexpr float kRelativeTolerance = 5e-7f;  // about 4 ulp at 1; observed: under 1e-7

struct Case {
  int R, Nh, Nkv, D;
  int64_t q_pos0;  // row t at position q_pos0 + t
  bool generated;
};

struct Outcome {
  UlpStats ulp;
  float max_abs_diff = 0;
};

const char* type_name(KvType t) {
  switch (t) {
    case KvType::kF32:
      return "f32";
    case KvType::kF16:
      return "f16";
    case KvType::kBF16:
      return "bf16";
    case KvType::kInt8:
      return "int8";
  }
  return "?";
}

Outcome compare_with_cpu(Context& ctx, const Case& c, KvType type, uint64_t seed) {
  const int kv_rows = int(c.q_pos0) + c.R;
  const size_t q_count = size_t(c.R) * c.Nh * c.D, kv_count = size_t(kv_rows) * c.Nkv * c.D;
  const std::vector<float> q = random_floats(q_count, seed, -3.f, 3.f);
  const std::vector<float> k = random_floats(kv_count, seed + 1, -1.f, 1.f);
  const std::vector<float> v = random_floats(kv_count, seed + 2, -1.f, 1.f);
  const size_t head_bytes = kv_head_bytes(type, c.D);
  std::vector<uint8_t> k_cache(kv_count / c.D * head_bytes), v_cache(k_cache.size());
  for (size_t row = 0; row < kv_count / c.D; ++row) {
    store_kv_head(k.data() + row * c.D, c.D, type, k_cache.data() + row * head_bytes);
    store_kv_head(v.data() + row * c.D, c.D, type, v_cache.data() + row * head_bytes);
  }
  AttentionShape shape{c.R, c.Nh, c.Nkv, c.D, c.q_pos0, 1.f / std::sqrt(float(c.D))};
  shape.generated = c.generated;
  std::vector<float> cpu(q_count);
  attention(shape, q.data(), k_cache.data(), v_cache.data(), type, cpu.data());

  DeviceAttentionShape ds{c.R, c.Nh, c.Nkv, c.D, kv_rows, shape.scale, c.generated};
  std::vector<int32_t> positions(c.R);
  for (int t = 0; t < c.R; ++t) positions[t] = int32_t(c.q_pos0 + t);
  Buffer qb = ctx.create_buffer(q_count * 4), pb = ctx.create_buffer(size_t(c.R) * 4);
  Buffer kb = ctx.create_buffer(k_cache.size()), vb = ctx.create_buffer(v_cache.size());
  Buffer ob = ctx.create_buffer(q_count * 4);
  Buffer scratch = ctx.create_buffer(attention_scratch_bytes(ds));
  ctx.upload(qb, 0, q.data(), q_count * 4);
  ctx.upload(pb, 0, positions.data(), positions.size() * 4);
  ctx.upload(kb, 0, k_cache.data(), k_cache.size());
  ctx.upload(vb, 0, v_cache.data(), v_cache.size());
  CommandRecorder recorder(ctx);
  record_attention(recorder, ds, qb, pb, kb, vb, type, ob, &scratch);
  recorder.submit_and_wait();
  std::vector<float> gpu(q_count);
  ctx.download(ob, 0, gpu.data(), q_count * 4);
  Outcome outcome{compare_ulp(gpu, cpu)};
  for (size_t i = 0; i < q_count; ++i)
    outcome.max_abs_diff = std::max(outcome.max_abs_diff, std::abs(gpu[i] - cpu[i]));
  return outcome;
}

constexpr KvType kTypes[] = {KvType::kF32, KvType::kF16, KvType::kBF16, KvType::kInt8};

void expect_bit_identical(Context& ctx, const Case& c, uint64_t seed, bool exact) {
  for (const KvType type : kTypes) {
    SCOPED_TRACE(type_name(type));
    const Outcome o = compare_with_cpu(ctx, c, type, seed);
    if (exact) {
      EXPECT_EQ(o.ulp.differing, 0u) << "max " << o.ulp.max_ulp << " ulp";
    } else {
      EXPECT_LE(o.max_abs_diff, kRelativeTolerance);
    }
  }
}

void expect_within_tolerance(Context& ctx, const Case& c, uint64_t seed) {
  for (const KvType type : kTypes) {
    SCOPED_TRACE(type_name(type));
    const Outcome o = compare_with_cpu(ctx, c, type, seed);
    // |v| <= 1 (int8 rows: at most 1 too), so the bound is absolute.
    EXPECT_LE(o.max_abs_diff, kRelativeTolerance);
    std::printf("[ info     ] %s R=%d P0=%lld: %zu differ, max %lld ulp, max |diff| %.3g\n",
                type_name(type), c.R, static_cast<long long>(c.q_pos0), o.ulp.differing,
                static_cast<long long>(o.ulp.max_ulp), double(o.max_abs_diff));
  }
}

TEST_F(AttentionTest, GeneratedRowsMatchCpuBitForBitWhenTheScoresFillBlocksOf8) {
  // Qwen3.5 shape (16 query heads over 2 KV heads, D 256) at position 127: 128 scores.
  expect_bit_identical(context(), {1, 16, 2, 256, 127, true}, 1, exact_device());
  // Qwen3 shape (16 over 8, D 128), one row at 1023 (several workgroup strides of keys).
  expect_bit_identical(context(), {1, 16, 8, 128, 1023, true}, 2, exact_device());
}

TEST_F(AttentionTest, GeneratedRowsWithAScalarTailWithinTolerance) {
  // Three decode rows (as a draft being verified) at positions 100..102.
  expect_within_tolerance(context(), {3, 8, 2, 256, 100, true}, 3);
}

TEST_F(AttentionTest, PromptRowsInTheFirstBlockMatchCpuBitForBit) {
  // 20 prompt rows from position 0, and 9 more continuing at position 40: all below 64.
  expect_bit_identical(context(), {20, 8, 2, 256, 0, false}, 4, exact_device());
  expect_bit_identical(context(), {9, 4, 4, 64, 40, false}, 5, exact_device());
}

TEST_F(AttentionTest, PromptRowsOverSeveralBlocksWithinTolerance) {
  // A chunk of 70 rows from position 30 (crossing the 64-key block edges) on the Qwen3.5
  // shape, and a 2-head chunk at 200 with a head size that is not a multiple of 64.
  expect_within_tolerance(context(), {70, 16, 2, 256, 30, false}, 6);
  expect_within_tolerance(context(), {5, 2, 1, 80, 200, false}, 7);
}

}  // namespace
}  // namespace qmlx::vulkan::testing
