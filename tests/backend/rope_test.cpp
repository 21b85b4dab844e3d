// RoPE on the device against kernels/rope.h's apply_rope, each row at its own position.
//
// Tolerance: none on devices with a correctly rounded fma (lavapipe): the angles are the CPU's
// (the table is filled with rope_angles) and the shader rounds exactly where GCC's code does.
// Elsewhere each output is two products and a sum of the same factors: within 2 ulp, barring
// cancellation, which random inputs avoid well enough for the bound below.
#include "backend/vulkan/rope.h"

#include <random>

#include "kernels/rope.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using RopeTest = VulkanTest;

struct Case {
  int rows, heads, head_dim, rot_dim;
  double theta;
};

UlpStats compare_with_cpu(Context& ctx, const Case& c, int64_t max_position, uint64_t seed) {
  const size_t row = size_t(c.heads) * c.head_dim;
  const std::vector<float> x = random_floats(size_t(c.rows) * row, seed, -2.f, 2.f);
  std::mt19937_64 rng(seed);
  std::vector<int32_t> positions(c.rows);
  for (int32_t& p : positions) p = int32_t(rng() % uint64_t(max_position));
  std::vector<float> cpu = x;
  for (int r = 0; r < c.rows; ++r)
    apply_rope(cpu.data() + size_t(r) * row, c.heads, c.head_dim, c.rot_dim,
               rope_angles(positions[r], c.rot_dim, c.theta));

  const RopeTable table = upload_rope_table(ctx, max_position, c.rot_dim, c.theta);
  Buffer xb = ctx.create_buffer(x.size() * 4), pb = ctx.create_buffer(positions.size() * 4);
  ctx.upload(xb, 0, x.data(), x.size() * 4);
  ctx.upload(pb, 0, positions.data(), positions.size() * 4);
  CommandRecorder recorder(ctx);
  record_rope(recorder, xb, pb, table, c.rows, c.heads, c.head_dim);
  recorder.submit_and_wait();
  std::vector<float> gpu(x.size());
  ctx.download(xb, 0, gpu.data(), gpu.size() * 4);
  return compare_ulp(gpu, cpu);
}

TEST_F(RopeTest, MatchesCpuBitForBit) {
  const Case cases[] = {
      {1, 16, 256, 64, 1e7},  // Qwen3.5 query heads, one decode row: partial rotary
      {7, 2, 256, 64, 1e7},   // its K heads, a prefill chunk
      {5, 8, 128, 128, 1e6},  // Qwen3: every dimension rotated
      {3, 3, 40, 24, 1e4},    // half of 12: the CPU's scalar tail after its vector loop
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("heads=" + std::to_string(c.heads) + " head_dim=" + std::to_string(c.head_dim) +
                 " rot_dim=" + std::to_string(c.rot_dim));
    const UlpStats s = compare_with_cpu(context(), c, 70000, c.rows * 31 + c.head_dim);
    if (exact_device()) {
      EXPECT_EQ(s.differing, 0u) << "max " << s.max_ulp << " ulp";
    } else {
      EXPECT_LE(s.max_ulp, 4);
    }
  }
}

TEST_F(RopeTest, LeavesTheUnrotatedDimensionsAlone) {
  const Case c{2, 4, 64, 16, 1e4};
  const std::vector<float> x = random_floats(size_t(c.rows) * c.heads * c.head_dim, 3);
  const RopeTable table = upload_rope_table(context(), 100, c.rot_dim, c.theta);
  const std::vector<int32_t> positions = {5, 99};
  Buffer xb = upload(x), pb = context().create_buffer(8);
  context().upload(pb, 0, positions.data(), 8);
  CommandRecorder recorder(context());
  record_rope(recorder, xb, pb, table, c.rows, c.heads, c.head_dim);
  recorder.submit_and_wait();
  const std::vector<float> gpu = download(xb, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (i % c.head_dim < size_t(c.rot_dim)) continue;
    EXPECT_EQ(bits_of(gpu[i]), bits_of(x[i])) << i;
  }
}

// Rows with angles of their own (M-RoPE image rows: -1 - j indexes the call's own table) among
// rows of the position table, each rotated as the CPU rotates it with those angles.
TEST_F(RopeTest, RowsWithTheirOwnAnglesMatchTheCpu) {
  const Case c{6, 4, 64, 64, 1e7};
  const int sections[] = {11, 11, 10};
  const size_t row = size_t(c.heads) * c.head_dim;
  const std::vector<float> x = random_floats(size_t(c.rows) * row, 17, -2.f, 2.f);
  // Rows 1, 2 and 4 are image rows at (t, h, w) positions; the rest text at table positions.
  const std::vector<int32_t> index = {9, -1, -2, 12, -3, 40};
  const RopeAngles own[] = {
      mrope_angles(10, 10, 11, c.rot_dim, c.theta, sections, true),
      mrope_angles(10, 11, 10, c.rot_dim, c.theta, sections, true),
      mrope_angles(10, 13, 27, c.rot_dim, c.theta, sections, true),
  };
  std::vector<float> own_table, cpu = x;
  for (const RopeAngles& a : own) {
    own_table.insert(own_table.end(), a.cos.begin(), a.cos.end());
    own_table.insert(own_table.end(), a.sin.begin(), a.sin.end());
  }
  for (int r = 0; r < c.rows; ++r) {
    const int32_t i = index[size_t(r)];
    apply_rope(cpu.data() + size_t(r) * row, c.heads, c.head_dim, c.rot_dim,
               i >= 0 ? rope_angles(i, c.rot_dim, c.theta) : own[size_t(-1 - i)]);
  }
  const RopeTable table = upload_rope_table(context(), 64, c.rot_dim, c.theta);
  Buffer xb = upload(x), own_b = upload(own_table);
  Buffer pb = context().create_buffer(index.size() * 4);
  context().upload(pb, 0, index.data(), index.size() * 4);
  CommandRecorder recorder(context());
  record_rope(recorder, xb, pb, table, c.rows, c.heads, c.head_dim, &own_b);
  recorder.submit_and_wait();
  const UlpStats s = compare_ulp(download(xb, x.size()), cpu);
  if (exact_device()) {
    EXPECT_EQ(s.differing, 0u) << "max " << s.max_ulp << " ulp";
  } else {
    EXPECT_LE(s.max_ulp, 4);
  }
}

}  // namespace
}  // namespace qmlx::vulkan::testing
