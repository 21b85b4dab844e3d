// Matmul on the device against kernels/matmul.h, for f32, f16 and bf16 weights, MLX affine
// 2- to 8-bit quantization and every GGUF block type (read in place, as their affine rewrite),
// and the batch invariance the engine relies on.
//
// Float weights: the shader follows the CPU's generated-row arithmetic (vec::dot and
// vec::dot_typed) lane for lane, so on lavapipe (true fma) the results are bit-identical for
// widths that are multiples of 8; elsewhere, and for the CPU's compiler-made scalar tail, they
// must lie within the summation bound below.
//
// Affine weights: both sides dequantize each weight with the same fma, but the device sums an
// output as 64 interleaved fma chains of L terms and a 6-level tree, the CPU's prompt rows as
// one chain of K terms. Any order of summing K products with fma has an error of at most
// gamma(n) * S, where S = sum |w_k x_k|, gamma(n) = n u / (1 - n u), u = 2^-24 and n the
// longest chain of roundings a term goes through (K for the CPU, L + 6 for the device). So the
// device must be within gamma(L + 6) * S of the exact (double) product, and within
// (gamma(K) + gamma(L + 6)) * S of the CPU: sound bounds, never flaky.
#include "backend/vulkan/matmul.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "host_matrix.h"
#include "kernels/gguf_affine.h"
#include "kernels/matmul.h"
#include "kernels/scalar_type.h"
#include "summation_bounds.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using MatmulTest = VulkanTest;

std::vector<float> device_matmul(Context& ctx, const DeviceMatrix& dw, const std::vector<float>& x,
                                 int T, size_t* dispatches = nullptr) {
  Buffer xb = ctx.create_buffer(x.size() * 4);
  ctx.upload(xb, 0, x.data(), x.size() * 4);
  Buffer yb = ctx.create_buffer(size_t(T) * dw.rows * 4);
  CommandRecorder recorder(ctx);
  record_matmul(recorder, dw, xb, T, yb);
  if (dispatches != nullptr) *dispatches = recorder.dispatch_count();
  recorder.submit_and_wait();
  std::vector<float> y(size_t(T) * dw.rows);
  ctx.download(yb, 0, y.data(), y.size() * 4);
  return y;
}

std::vector<float> cpu_matmul(const WeightMatrix& w, const std::vector<float>& x, int T,
                              int generated_rows) {
  std::vector<float> y(size_t(T) * w.rows);
  matmul(x.data(), T, w, y.data(), generated_rows);
  return y;
}

const char* format_name(WeightFormat f) {
  return f == WeightFormat::kF32 ? "f32" : f == WeightFormat::kF16 ? "f16" : "bf16";
}

TEST_F(MatmulTest, FloatWeightsMatchCpuDecodeRows) {
  const int T = 3;
  for (const WeightFormat format : {WeightFormat::kF32, WeightFormat::kF16, WeightFormat::kBF16})
    for (const int cols : {8, 64, 1000, 4096})
      for (const int rows : {1, 67}) {
        SCOPED_TRACE(std::string(format_name(format)) + " " + std::to_string(rows) + "x" +
                     std::to_string(cols));
        const HostMatrix m = float_matrix(format, rows, cols, cols + rows);
        const std::vector<float> x = random_floats(size_t(T) * cols, cols, -1.f, 1.f);
        const DeviceMatrix dw = upload_matrix(context(), m.w);
        const std::vector<float> gpu = device_matmul(context(), dw, x, T);
        const std::vector<float> cpu = cpu_matmul(m.w, x, T, /*generated_rows=*/T);
        if (exact_device()) {
          size_t differing = 0;
          for (size_t i = 0; i < gpu.size(); ++i) differing += bits_of(gpu[i]) != bits_of(cpu[i]);
          EXPECT_EQ(differing, 0u);
        } else {
          expect_within_summation_bounds(m.w, x, T, gpu, cpu, cols);
        }
      }
}

TEST_F(MatmulTest, FloatWeightsWithScalarTailsWithinBounds) {
  for (const WeightFormat format : {WeightFormat::kF32, WeightFormat::kF16, WeightFormat::kBF16})
    for (const int cols : {1, 5, 13, 100, 1003}) {
      SCOPED_TRACE(std::string(format_name(format)) + " cols=" + std::to_string(cols));
      const HostMatrix m = float_matrix(format, 9, cols, cols);
      const std::vector<float> x = random_floats(size_t(2) * cols, cols + 1);
      const DeviceMatrix dw = upload_matrix(context(), m.w);
      expect_within_summation_bounds(m.w, x, 2, device_matmul(context(), dw, x, 2),
                                     cpu_matmul(m.w, x, 2, 2), cols);
    }
}

struct AffineCase {
  int bits, group_size;
  ScalarType scale_type;
};

// The longest fma chain of one device output: each of 64 lanes takes steps of 32 / bits codes
// (a word; 2, 4, 8 bits) or 32 codes (3, 5, 6 bits) in turn, then a 6-level tree.
double affine_chain(int bits, int cols) {
  const int step = 32 % bits == 0 ? 32 / bits : 32;
  return double((cols / step + 63) / 64) * step + 6;
}

TEST_F(MatmulTest, AffineWeightsWithinSummationBoundsOfCpu) {
  const int T = 3;
  for (const int bits : {2, 3, 4, 5, 6, 8})
    for (const int group_size : {32, 64, 128})
      for (const ScalarType scale_type : {ScalarType::kF16, ScalarType::kBF16, ScalarType::kF32})
        for (const int cols : {128, 4096}) {
          SCOPED_TRACE("bits=" + std::to_string(bits) + " group=" + std::to_string(group_size) +
                       " scale=" + std::to_string(int(scale_type)) +
                       " cols=" + std::to_string(cols));
          const HostMatrix m = affine_matrix(bits, group_size, scale_type, 37, cols, bits + cols);
          const std::vector<float> x = random_floats(size_t(T) * cols, cols);
          const DeviceMatrix dw = upload_matrix(context(), m.w);
          const std::vector<float> gpu = device_matmul(context(), dw, x, T);
          // The CPU's prompt rows: dequantized to f32 like the device, one fma chain.
          const std::vector<float> cpu = cpu_matmul(m.w, x, T, /*generated_rows=*/0);
          expect_within_summation_bounds(m.w, x, T, gpu, cpu, affine_chain(bits, cols));
        }
}

// GGUF blocks stay as stored and are read in place: every type bit for bit the affine rows
// gguf_affine.h rewrites them to (the same codes, scales and arithmetic) in the device memory of
// the blocks alone, and against the CPU's prompt rows of the same blocks (decoded to floats, one
// chain). Rows of an odd number of blocks of an odd size start 2 bytes off a word.
TEST_F(MatmulTest, GgufBlocksReadInPlaceAreTheirAffineRewrite) {
  const int T = 3, rows = 29;
  for (const GgufType t :
       {GgufType::kQ4_0, GgufType::kQ4_1, GgufType::kQ5_0, GgufType::kQ5_1, GgufType::kQ8_0,
        GgufType::kQ2_K, GgufType::kQ3_K, GgufType::kQ4_K, GgufType::kQ5_K, GgufType::kQ6_K}) {
    const int block = gguf_block_elems(t);
    for (const int cols : {block, 2048 + block}) {
      SCOPED_TRACE(std::string(gguf_type_name(t)) + " cols=" + std::to_string(cols));
      const HostMatrix m = gguf_matrix(t, rows, cols, uint64_t(t) * 31 + cols);
      const std::vector<float> x = random_floats(size_t(T) * cols, cols + 3);
      const DeviceMatrix dw = upload_matrix(context(), m.w);
      EXPECT_EQ(dw.format, WeightFormat::kGguf);
      EXPECT_EQ(dw.bits, gguf_affine_bits(t));
      EXPECT_EQ(device_matrix_bytes(m.w), size_t(rows) * m.w.row_bytes());
      const std::vector<float> gpu = device_matmul(context(), dw, x, T);

      const OwnedMatrix rewritten = gguf_to_affine(m.w);
      // Q4_1 and Q5_1 blocks hold an f16 scale and bias per 32 values, as their rewrite does.
      EXPECT_GE(device_matrix_bytes(rewritten.view), device_matrix_bytes(m.w));
      const std::vector<float> affine =
          device_matmul(context(), upload_matrix(context(), rewritten.view), x, T);
      size_t differing = 0;
      for (size_t i = 0; i < gpu.size(); ++i) differing += bits_of(gpu[i]) != bits_of(affine[i]);
      EXPECT_EQ(differing, 0u) << "against the affine rewrite";

      const std::vector<float> cpu = cpu_matmul(m.w, x, T, /*generated_rows=*/0);
      expect_within_summation_bounds(m.w, x, T, gpu, cpu, affine_chain(dw.bits, cols));
    }
  }
}

// QMLX_VULKAN_MASK_FEATURES=gguf-blocks uploads GGUF weights as their affine rewrite instead
// (context.h): more device memory, the same bits.
TEST_F(MatmulTest, GgufBlocksMaskedUploadTheRewriteWithTheSameBits) {
  const int T = 2, rows = 9, cols = 768;
  const HostMatrix m = gguf_matrix(GgufType::kQ6_K, rows, cols, 41);
  const std::vector<float> x = random_floats(size_t(T) * cols, 42);
  const std::vector<float> in_place = device_matmul(context(), upload_matrix(context(), m.w), x, T);
  const char* before = std::getenv("QMLX_VULKAN_MASK_FEATURES");
  const std::string kept = before ? before : "";
  setenv("QMLX_VULKAN_MASK_FEATURES",
         (kept.empty() ? "" : kept + ",").append("gguf-blocks").c_str(), 1);
  const size_t masked_bytes = device_matrix_bytes(m.w);
  const DeviceMatrix rewritten = upload_matrix(context(), m.w);
  if (before)
    setenv("QMLX_VULKAN_MASK_FEATURES", kept.c_str(), 1);
  else
    unsetenv("QMLX_VULKAN_MASK_FEATURES");
  EXPECT_EQ(rewritten.format, WeightFormat::kAffine);
  EXPECT_EQ(masked_bytes, device_matrix_bytes(gguf_to_affine(m.w).view));
  EXPECT_GT(masked_bytes, device_matrix_bytes(m.w));
  const std::vector<float> affine = device_matmul(context(), rewritten, x, T);
  for (size_t i = 0; i < affine.size(); ++i)
    ASSERT_EQ(bits_of(affine[i]), bits_of(in_place[i])) << i;
}

// A token's outputs must not depend on the batch it is computed in (issue 18's invariance).
TEST_F(MatmulTest, RowsAreBitIdenticalAloneOrInABatchOfEight) {
  const int T = 8, cols = 1024, rows = 45;
  std::vector<HostMatrix> matrices;
  for (const WeightFormat f : {WeightFormat::kF32, WeightFormat::kF16, WeightFormat::kBF16})
    matrices.push_back(float_matrix(f, rows, cols, 5));
  matrices.push_back(affine_matrix(4, 64, ScalarType::kBF16, rows, cols, 6));
  matrices.push_back(affine_matrix(8, 32, ScalarType::kF16, rows, cols, 7));
  matrices.push_back(affine_matrix(3, 32, ScalarType::kF16, rows, cols, 9));
  matrices.push_back(gguf_matrix(GgufType::kQ6_K, rows, cols, 10));
  for (const HostMatrix& m : matrices) {
    const DeviceMatrix dw = upload_matrix(context(), m.w);
    const std::vector<float> x = random_floats(size_t(T) * cols, 8);
    const std::vector<float> batch = device_matmul(context(), dw, x, T);
    for (int t = 0; t < T; ++t) {
      const std::vector<float> one(x.begin() + size_t(t) * cols, x.begin() + size_t(t + 1) * cols);
      const std::vector<float> alone = device_matmul(context(), dw, one, 1);
      for (int r = 0; r < rows; ++r)
        ASSERT_EQ(bits_of(alone[r]), bits_of(batch[size_t(t) * rows + r]))
            << "format " << int(m.w.format) << " token " << t << " row " << r;
    }
  }
}

// Weights over lavapipe's 128 MiB binding limit are split into row ranges.
TEST_F(MatmulTest, MatricesLargerThanABindingAreSplit) {
  const uint64_t range = context().device_info().max_storage_buffer_range;
  {
    const int cols = 4096, rows = int(range / (cols * 4)) + 256;  // f32: just over one binding
    const HostMatrix m = float_matrix(WeightFormat::kF32, rows, cols, 11);
    if (m.data.size() <= context().device_info().max_allocation_bytes) {
      const std::vector<float> x = random_floats(size_t(2) * cols, 12);
      const DeviceMatrix dw = upload_matrix(context(), m.w);
      size_t dispatches = 0;
      const std::vector<float> gpu = device_matmul(context(), dw, x, 2, &dispatches);
      EXPECT_GE(dispatches, 2u);
      const std::vector<float> cpu = cpu_matmul(m.w, x, 2, 2);
      if (exact_device()) {
        size_t differing = 0;
        for (size_t i = 0; i < gpu.size(); ++i) differing += bits_of(gpu[i]) != bits_of(cpu[i]);
        EXPECT_EQ(differing, 0u);
      } else {
        expect_within_summation_bounds(m.w, x, 2, gpu, cpu, cols);
      }
    }
  }
  {
    // 4-bit, an lm_head-sized row count: over the binding range and over 65,535 workgroups.
    const int cols = 4096, rows = int(range / (cols / 2)) + 512;
    const HostMatrix m = affine_matrix(4, 64, ScalarType::kBF16, rows, cols, 13);
    const std::vector<float> x = random_floats(cols, 14);
    const DeviceMatrix dw = upload_matrix(context(), m.w);
    size_t dispatches = 0;
    const std::vector<float> gpu = device_matmul(context(), dw, x, 1, &dispatches);
    EXPECT_GE(dispatches, 2u);
    const std::vector<float> cpu = cpu_matmul(m.w, x, 1, 0);
    expect_within_summation_bounds(m.w, x, 1, gpu, cpu, affine_chain(4, cols));
  }
  {
    // Q6_K rows of 17 blocks (3,570 bytes, 2 off a word): over the binding range, so the
    // ranges start mid-word.
    const int cols = 17 * 256, rows = int(range / 3570) + 64;
    const HostMatrix m = gguf_matrix(GgufType::kQ6_K, rows, cols, 15);
    const std::vector<float> x = random_floats(cols, 16);
    const DeviceMatrix dw = upload_matrix(context(), m.w);
    size_t dispatches = 0;
    const std::vector<float> gpu = device_matmul(context(), dw, x, 1, &dispatches);
    EXPECT_GE(dispatches, 2u);
    const std::vector<float> cpu = cpu_matmul(m.w, x, 1, 0);
    expect_within_summation_bounds(m.w, x, 1, gpu, cpu, affine_chain(6, cols));
  }
}

TEST_F(MatmulTest, UnsupportedFormatsAreRefusedWithAReason) {
  WeightMatrix w;
  w.format = WeightFormat::kAffine;
  w.bits = 7;
  w.group_size = 64;
  std::string why;
  EXPECT_FALSE(device_matmul_supports(w, &why));
  EXPECT_EQ(why, "7-bit affine codes in groups of 64");
  w.bits = 3;
  EXPECT_TRUE(device_matmul_supports(w, &why));
  w.format = WeightFormat::kGguf;
  w.gguf_type = GgufType::kF16;  // float GGUF tensors load as kF16, never as blocks
  EXPECT_FALSE(device_matmul_supports(w, &why));
  EXPECT_EQ(why, "GGUF F16 blocks");
  w.gguf_type = GgufType::kQ3_K;
  EXPECT_TRUE(device_matmul_supports(w, &why));
}

}  // namespace
}  // namespace qmlx::vulkan::testing
