// The embedding gather on the device against the CPU's (dequantize_rows of one row per token,
// as Model::embed does), for f32, f16 and bf16 tables, MLX affine 2- to 8-bit ones and GGUF
// block tables (read in place, as their affine rewrite: kernels/gguf_affine.h), and a table larger
// than one storage binding, so the gather runs in several row ranges.
//
// Tolerance: none on lavapipe. Widening is exact, and an affine weight is one fma on both
// sides (the device's correctly rounded, or emulated with float64). Devices with an unfused
// fma and no float64 round the product apart: within 1 ulp of the dequantized weight.
#include "backend/vulkan/embedding.h"

#include <cstdio>

#include "backend/vulkan/binding_window.h"
#include "host_matrix.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using EmbeddingTest = VulkanTest;

std::vector<float> cpu_embed(const WeightMatrix& w, const std::vector<int32_t>& ids) {
  std::vector<float> out(ids.size() * w.cols);
  for (size_t t = 0; t < ids.size(); ++t)
    dequantize_rows(w, ids[t], ids[t] + 1, out.data() + t * w.cols);
  return out;
}

std::vector<float> device_embed(Context& ctx, const DeviceMatrix& table,
                                const std::vector<int32_t>& ids, size_t* dispatches = nullptr) {
  Buffer id_buffer = ctx.create_buffer(ids.size() * 4);
  ctx.upload(id_buffer, 0, ids.data(), ids.size() * 4);
  Buffer out = ctx.create_buffer(ids.size() * table.cols * 4);
  CommandRecorder recorder(ctx);
  record_embedding(recorder, table, id_buffer, int(ids.size()), out);
  if (dispatches != nullptr) *dispatches = recorder.dispatch_count();
  recorder.submit_and_wait();
  std::vector<float> y(ids.size() * table.cols);
  ctx.download(out, 0, y.data(), y.size() * 4);
  return y;
}

// Repeats, the first and last rows, and rows in between.
std::vector<int32_t> token_ids(int rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> ids = {0, rows - 1, 3, 3, rows / 2};
  for (int i = 0; i < 12; ++i) ids.push_back(int32_t(rng() % uint64_t(rows)));
  return ids;
}

void expect_matches(const std::vector<float>& device, const std::vector<float>& cpu, bool exact) {
  const UlpStats s = compare_ulp(device, cpu);
  if (exact) {
    EXPECT_EQ(s.differing, 0u) << "max " << s.max_ulp << " ulp";
  } else {
    EXPECT_LE(s.max_ulp, 1);
  }
}

TEST_F(EmbeddingTest, FloatTablesMatchCpuBitForBit) {
  for (const WeightFormat format : {WeightFormat::kF32, WeightFormat::kF16, WeightFormat::kBF16}) {
    // An odd width puts 16-bit rows at odd element offsets.
    for (const int cols : {64, 1024, 37}) {
      SCOPED_TRACE("format " + std::to_string(int(format)) + " cols " + std::to_string(cols));
      const HostMatrix m = float_matrix(format, 301, cols, cols + int(format), 4.f);
      const DeviceMatrix d = upload_matrix(context(), m.w);
      const std::vector<int32_t> ids = token_ids(m.w.rows, cols);
      EXPECT_EQ(compare_ulp(device_embed(context(), d, ids), cpu_embed(m.w, ids)).differing, 0u);
    }
  }
}

TEST_F(EmbeddingTest, AffineTablesMatchCpu) {
  for (const int bits : {2, 3, 4, 5, 6, 8}) {
    for (const int group_size : {32, 64, 128}) {
      for (const ScalarType scale_type : {ScalarType::kF16, ScalarType::kBF16, ScalarType::kF32}) {
        SCOPED_TRACE("bits " + std::to_string(bits) + " group " + std::to_string(group_size) +
                     " scales " + std::to_string(int(scale_type)));
        const HostMatrix m =
            affine_matrix(bits, group_size, scale_type, 257, 512, bits + group_size);
        const DeviceMatrix d = upload_matrix(context(), m.w);
        const std::vector<int32_t> ids = token_ids(m.w.rows, group_size);
        expect_matches(device_embed(context(), d, ids), cpu_embed(m.w, ids),
                       context().fma_mode() != FmaMode::kUnfused);
      }
    }
  }
}

// GGUF token embeddings (llama.cpp stores token_embd as Q4_K, Q6_K, Q8_0...): each value as
// ggml decodes it (the sign of a zero aside, which compare_ulp does not count). Rows of an odd
// number of blocks: for most types every other row starts 2 bytes off a word.
TEST_F(EmbeddingTest, GgufTablesMatchCpu) {
  for (const GgufType t :
       {GgufType::kQ4_0, GgufType::kQ4_1, GgufType::kQ5_0, GgufType::kQ5_1, GgufType::kQ8_0,
        GgufType::kQ2_K, GgufType::kQ3_K, GgufType::kQ4_K, GgufType::kQ5_K, GgufType::kQ6_K}) {
    SCOPED_TRACE(gguf_type_name(t));
    const HostMatrix m = gguf_matrix(t, 131, 3 * gguf_block_elems(t), uint64_t(t));
    const DeviceMatrix d = upload_matrix(context(), m.w);
    const std::vector<int32_t> ids = token_ids(m.w.rows, uint64_t(t) + 1);
    expect_matches(device_embed(context(), d, ids), cpu_embed(m.w, ids),
                   context().fma_mode() != FmaMode::kUnfused);
  }
}

TEST_F(EmbeddingTest, TableLargerThanOneBindingIsGatheredInRanges) {
  // 70,000 x 1,024 bf16 = 143 MB (137 MiB): more than lavapipe's 128 MiB per binding. Values are
  // cheap bit patterns (every bf16 with a small exponent), not random draws: the test stays fast.
  const int rows = 70000, cols = 1024;
  HostMatrix m;
  m.data.resize(size_t(rows) * cols * 2);
  for (size_t i = 0; i < m.data.size() / 2; ++i) {
    const uint16_t v = uint16_t(0x3c00 | ((i * 2654435761u) >> 7 & 0x83ff));
    std::memcpy(m.data.data() + 2 * i, &v, 2);
  }
  m.w.format = WeightFormat::kBF16;
  m.w.rows = rows;
  m.w.cols = cols;
  m.w.data = m.data.data();
  const DeviceMatrix d = upload_matrix(context(), m.w);
  const size_t table_bytes = m.data.size();
  const size_t ranges = (table_bytes + window_capacity(context()) - 1) / window_capacity(context());
  // Ids on both sides of every range boundary the split can have, and the last row.
  std::vector<int32_t> ids = token_ids(rows, 7);
  const int rows_per_range = int(window_capacity(context()) / (cols * 2));
  for (int b = rows_per_range; b < rows; b += rows_per_range) {
    ids.push_back(b - 1);
    ids.push_back(b);
  }
  size_t dispatches = 0;
  const std::vector<float> device = device_embed(context(), d, ids, &dispatches);
  EXPECT_EQ(dispatches, ranges);
  std::printf("[ info     ] %zu-byte table, binding range %zu: %zu dispatches\n", table_bytes,
              size_t(context().device_info().max_storage_buffer_range), dispatches);
  EXPECT_EQ(compare_ulp(device, cpu_embed(m.w, ids)).differing, 0u);
}

}  // namespace
}  // namespace qmlx::vulkan::testing
