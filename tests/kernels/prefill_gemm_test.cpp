// The two prefill kernels (the 16-row panel GEMM and the few-token GEMM) on every stored format:
// each equals the double-precision product with the matrix as dequantize_rows decodes it, for
// token counts around the tile sizes, row counts that leave partial tiles and chunks, column
// counts that leave a partial pass (and, for the float formats, a partial 8-column step), and
// row ranges that start and end inside the matrix.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gguf_block_samples.h"
#include "kernels/few_token_gemm.h"
#include "kernels/packed_gemm.h"
#include "kernels/weight_matrix.h"
#include "test_util.h"
#include "tiny_model.h"

namespace qmlx {
namespace {

using testing::random_vector;
using testing::relative_error;

using RowsKernel = void (*)(const float*, int, const WeightMatrix&, float*, int, int);

struct StoredMatrix {
  std::string name;
  WeightMatrix view;
  std::vector<std::vector<uint8_t>> storage;  // keeps the bytes `view` points into
};

StoredMatrix affine_matrix(int bits, int group_size, int rows, int cols) {
  auto q = testing::quantize_affine(random_vector(size_t(rows) * cols, bits * 100 + group_size), {},
                                    rows, cols, bits, group_size);
  StoredMatrix m;
  m.name = "affine " + std::to_string(bits) + "-bit gs" + std::to_string(group_size);
  m.storage = {q.weight.bytes, q.scales.bytes, q.biases.bytes};
  m.view.format = WeightFormat::kAffine;
  m.view.rows = rows;
  m.view.cols = cols;
  m.view.bits = bits;
  m.view.group_size = group_size;
  m.view.scale_type = ScalarType::kBF16;
  m.view.data = m.storage[0].data();
  m.view.scales = m.storage[1].data();
  m.view.biases = m.storage[2].data();
  return m;
}

StoredMatrix gguf_matrix(GgufType t, int rows, int cols) {
  StoredMatrix m;
  m.name = std::string("gguf ") + gguf_type_name(t);
  m.storage = {testing::random_gguf_blocks(t, size_t(rows) * cols, uint64_t(t) + 3)};
  m.view.format = WeightFormat::kGguf;
  m.view.gguf_type = t;
  m.view.rows = rows;
  m.view.cols = cols;
  m.view.data = m.storage[0].data();
  return m;
}

StoredMatrix float_matrix(WeightFormat format, int rows, int cols) {
  auto w = random_vector(size_t(rows) * cols, 17);
  StoredMatrix m;
  switch (format) {
    case WeightFormat::kF16:
      m.name = "f16";
      m.storage = {testing::f16_blob({rows, cols}, w).bytes};
      break;
    case WeightFormat::kBF16:
      m.name = "bf16";
      m.storage = {testing::bf16_blob({rows, cols}, w).bytes};
      break;
    default:
      m.name = "f32";
      m.storage = {testing::f32_blob({rows, cols}, w).bytes};
  }
  m.view.format = format;
  m.view.rows = rows;
  m.view.cols = cols;
  m.view.data = m.storage[0].data();
  return m;
}

// 70 rows: a 64-row chunk plus a partial one, and partial 4-row and 16-row tiles.
std::vector<StoredMatrix> every_format(int rows) {
  std::vector<StoredMatrix> all;
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int gs : {32, 64, 128}) all.push_back(affine_matrix(bits, gs, rows, 640));
  for (GgufType t : {GgufType::kQ8_0, GgufType::kQ4_0, GgufType::kQ4_1, GgufType::kQ5_0,
                     GgufType::kQ5_1, GgufType::kQ2_K, GgufType::kQ3_K, GgufType::kQ4_K,
                     GgufType::kQ5_K, GgufType::kQ6_K, GgufType::kF16, GgufType::kBF16})
    all.push_back(gguf_matrix(t, rows, 768));
  for (WeightFormat f : {WeightFormat::kF32, WeightFormat::kF16, WeightFormat::kBF16})
    all.push_back(float_matrix(f, rows, 531));
  return all;
}

void expect_matches_decoded_product(RowsKernel kernel, const char* kernel_name,
                                    const StoredMatrix& m, int T, int begin, int end) {
  const int rows = m.view.rows, cols = m.view.cols;
  std::vector<float> w(size_t(rows) * cols);
  dequantize_rows(m.view, 0, rows, w.data());
  const auto x = random_vector(size_t(T) * cols, 40 + T);
  const float sentinel = -12345.f;
  std::vector<float> y(size_t(T) * rows, sentinel);
  kernel(x.data(), T, m.view, y.data(), begin, end);
  std::vector<double> expected(size_t(T) * rows), got(size_t(T) * rows);
  for (int t = 0; t < T; ++t)
    for (int r = 0; r < rows; ++r) {
      const size_t at = size_t(t) * rows + r;
      if (r < begin || r >= end) {
        EXPECT_EQ(y[at], sentinel) << kernel_name << " wrote row " << r << " outside its range";
        continue;
      }
      double s = 0;
      for (int k = 0; k < cols; ++k) s += double(x[size_t(t) * cols + k]) * w[size_t(r) * cols + k];
      expected[at] = s;
      got[at] = y[at];
    }
  EXPECT_LT(relative_error(got, expected), 1e-5) << kernel_name << " on " << m.name << ", T=" << T
                                                 << ", rows [" << begin << ", " << end << ")";
}

TEST(PrefillGemmTest, BothKernelsMatchTheDecodedProductOnEveryFormat) {
  for (const StoredMatrix& m : every_format(70))
    for (int T : {2, 3, 7, 16, 33}) {
      expect_matches_decoded_product(few_token_gemm_rows, "few-token", m, T, 0, 70);
      expect_matches_decoded_product(packed_gemm_rows, "panel", m, T, 0, 70);
    }
}

TEST(PrefillGemmTest, RowRangesInsideTheMatrixWriteOnlyTheirRows) {
  for (const StoredMatrix& m : every_format(70))
    for (auto [begin, end] : {std::pair{5, 70}, std::pair{0, 9}, std::pair{13, 14}}) {
      expect_matches_decoded_product(few_token_gemm_rows, "few-token", m, 5, begin, end);
      expect_matches_decoded_product(packed_gemm_rows, "panel", m, 5, begin, end);
    }
}

// A row's columns [k0, k1) decode to the same values as that part of the whole row.
TEST(PrefillGemmTest, RowRangesDecodeLikeWholeRows) {
  for (const StoredMatrix& m : every_format(3)) {
    const int cols = m.view.cols, step = column_alignment(m.view);
    std::vector<float> whole(cols);
    dequantize_rows(m.view, 2, 3, whole.data());
    for (int k0 = 0; k0 < cols; k0 += step)
      for (int k1 : {k0 + step, cols}) {
        std::vector<float> part(size_t(k1 - k0));
        dequantize_row_range(m.view, 2, k0, k1, part.data());
        ASSERT_EQ(part, std::vector<float>(whole.begin() + k0, whole.begin() + k1))
            << m.name << " columns [" << k0 << ", " << k1 << ")";
      }
  }
}

}  // namespace
}  // namespace qmlx
