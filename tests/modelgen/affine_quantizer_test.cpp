#include "modelgen/affine_quantizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace qmlx::modelgen {
namespace {

TEST(PackRow, FourBitsAreNibblesLowFirst) {
  const std::vector<uint32_t> values = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<uint32_t> words(1);
  pack_row(values, 4, words);
  EXPECT_EQ(words[0], 0x87654321u);
}

TEST(PackRow, ThreeBitsStraddleWordsLsbFirst) {
  // Values i % 8 for i = 0..31, 3 bits each: value 10 (= 2) puts its low two bits at
  // bits 30..31 of word 0 and its high bit at bit 0 of word 1. Worked out bit by bit.
  std::vector<uint32_t> values(32);
  for (int i = 0; i < 32; ++i) values[i] = i % 8;
  std::vector<uint32_t> words(3);
  pack_row(values, 3, words);
  EXPECT_EQ(words, (std::vector<uint32_t>{0x88fac688u, 0xc688fac6u, 0xfac688fau}));
  for (int i = 0; i < 32; ++i) EXPECT_EQ(unpack_value(words, 3, i), values[i]) << i;
}

TEST(PackRow, SixBitsRoundTrip) {
  std::vector<uint32_t> values(32);
  for (int i = 0; i < 32; ++i) values[i] = (63 - i) % 64;
  std::vector<uint32_t> words(6);
  pack_row(values, 6, words);
  EXPECT_EQ(words[0], 0xbbf3dfbfu);  // 63 | 62<<6 | 61<<12 | 60<<18 | 59<<24 | (58&3)<<30
  for (int i = 0; i < 32; ++i) EXPECT_EQ(unpack_value(words, 6, i), values[i]) << i;
}

class QuantizerRoundTrip : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(QuantizerRoundTrip, ErrorWithinHalfAStepPlusScaleRounding) {
  const auto [bits, group_size] = GetParam();
  const int64_t rows = 6, cols = 256;
  std::mt19937 rng(bits * 1000 + group_size);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> w(rows * cols);
  for (float& v : w) v = normal(rng);
  for (const TensorDType dtype : {TensorDType::kF32, TensorDType::kBF16, TensorDType::kF16}) {
    const auto q = quantize_affine(w, rows, cols, {bits, group_size}, dtype);
    ASSERT_EQ(q.packed.size(), size_t(rows * cols * bits / 32));
    ASSERT_EQ(q.scales.size(), size_t(rows * cols / group_size));
    const auto back = dequantize_affine(q);
    const float relative_rounding = dtype == TensorDType::kBF16  ? 1.0f / 128
                                    : dtype == TensorDType::kF16 ? 1.0f / 1024
                                                                 : 1e-6f;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t g = 0; g < cols / group_size; ++g) {
        const auto begin = w.begin() + r * cols + g * group_size;
        const auto [lo, hi] = std::minmax_element(begin, begin + group_size);
        const float step = (*hi - *lo) / float((1 << bits) - 1);
        // Half a step from rounding, plus what rounding the scale and bias costs at the
        // ends of the range.
        const float bound = 0.5f * step * (1 + relative_rounding) +
                            relative_rounding * (std::fabs(*lo) + (*hi - *lo)) + 1e-7f;
        for (int i = 0; i < group_size; ++i) {
          const int64_t index = r * cols + g * group_size + i;
          ASSERT_LE(std::fabs(back[index] - w[index]), bound)
              << "bits " << bits << " group " << group_size << " index " << index;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllModes, QuantizerRoundTrip,
                         ::testing::Combine(::testing::Values(2, 3, 4, 5, 6, 8),
                                            ::testing::Values(32, 64, 128)));

TEST(Quantizer, ConstantGroupIsExact) {
  std::vector<float> w(64, 0.25f);
  const auto q = quantize_affine(w, 1, 64, {4, 64}, TensorDType::kBF16);
  for (float v : dequantize_affine(q)) EXPECT_FLOAT_EQ(v, 0.25f);
}

TEST(Quantizer, RejectsUnsupportedModes) {
  std::vector<float> w(96, 0.0f);
  EXPECT_THROW(quantize_affine(w, 1, 96, {7, 32}, TensorDType::kF32), std::exception);
  EXPECT_THROW(quantize_affine(w, 1, 96, {4, 64}, TensorDType::kF32), std::exception);
}

}  // namespace
}  // namespace qmlx::modelgen
