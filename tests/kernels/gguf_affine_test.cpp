// gguf_to_affine (kernels/gguf_affine.h) against the scalar GGUF decoders: every quantized type,
// random blocks, each rewritten weight scale * q + bias (one fma, as the device computes it)
// equal to ggml's decoded value. The affine side is read here with a bit-stream reader of its
// own, so a layout mistake on either side shows.
#include "kernels/gguf_affine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "base/error.h"
#include "gguf_block_samples.h"

namespace qmlx {
namespace {

const GgufType kQuantized[] = {GgufType::kQ4_0, GgufType::kQ4_1, GgufType::kQ5_0, GgufType::kQ5_1,
                               GgufType::kQ8_0, GgufType::kQ2_K, GgufType::kQ3_K, GgufType::kQ4_K,
                               GgufType::kQ5_K, GgufType::kQ6_K};

// Code c of row r: bits [c * bits, (c + 1) * bits) of the row's LSB-first stream.
uint32_t code_at(const WeightMatrix& a, int r, int c) {
  const uint8_t* row = a.data + size_t(r) * a.cols * a.bits / 8;
  uint32_t v = 0;
  for (int i = 0; i < a.bits; ++i) {
    const size_t bit = size_t(c) * a.bits + i;
    v |= uint32_t((row[bit / 8] >> (bit % 8)) & 1) << i;
  }
  return v;
}

TEST(GgufAffineTest, EveryQuantizedTypeDecodesToGgmlsValues) {
  for (const GgufType t : kQuantized) {
    SCOPED_TRACE(gguf_type_name(t));
    ASSERT_TRUE(gguf_affine_supported(t));
    const int rows = 3, cols = 2 * 256;  // two super-blocks (sixteen 32-value blocks) a row
    const std::vector<uint8_t> blocks =
        testing::random_gguf_blocks(t, size_t(rows) * cols, uint64_t(t) + 7);
    const WeightMatrix w = testing::gguf_view(t, rows, cols, blocks);
    std::vector<float> expected(size_t(rows) * cols);
    gguf_dequantize_scalar(t, blocks.data(), expected.size(), expected.data());

    const OwnedMatrix a = gguf_to_affine(w);
    EXPECT_EQ(a.view.format, WeightFormat::kAffine);
    EXPECT_EQ(a.view.bits, gguf_affine_bits(t));
    EXPECT_EQ(a.view.group_size, gguf_affine_group_size(t));
    EXPECT_EQ(a.view.scale_type, gguf_affine_scale_type(t));
    ASSERT_EQ(a.data.size(), size_t(rows) * cols * a.view.bits / 8);
    size_t differing = 0;
    std::set<uint32_t> codes_seen;
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        const size_t g = size_t(r) * (cols / a.view.group_size) + c / a.view.group_size;
        const float scale = load_scalar(a.view.scales, a.view.scale_type, g);
        const float bias = load_scalar(a.view.biases, a.view.scale_type, g);
        const uint32_t q = code_at(a.view, r, c);
        codes_seen.insert(q);
        const float got = std::fma(scale, float(q), bias);
        const float want = expected[size_t(r) * cols + c];
        if (got != want && differing++ < 5)  // == : the sign of a zero may differ
          ADD_FAILURE() << "row " << r << " col " << c << ": " << got << " vs " << want;
      }
    EXPECT_EQ(differing, 0u);
    // Random bytes reach every code value of the width: the whole range was checked.
    EXPECT_EQ(codes_seen.size(), size_t(1) << a.view.bits);
  }
}

// A row slice rewrites to the same rows as the whole (the device uploads in slices).
TEST(GgufAffineTest, RowSlicesRewriteAsTheWhole) {
  const GgufType t = GgufType::kQ6_K;
  const int rows = 5, cols = 256;
  const std::vector<uint8_t> blocks = testing::random_gguf_blocks(t, size_t(rows) * cols, 3);
  const WeightMatrix w = testing::gguf_view(t, rows, cols, blocks);
  const OwnedMatrix whole = gguf_to_affine(w);
  const OwnedMatrix tail = gguf_to_affine(w.row_slice(2, 5));
  const size_t row = size_t(cols) * 6 / 8, meta = size_t(cols / 16) * 4;
  EXPECT_TRUE(std::equal(tail.data.begin(), tail.data.end(), whole.data.begin() + 2 * row));
  EXPECT_TRUE(std::equal(tail.scales.begin(), tail.scales.end(), whole.scales.begin() + 2 * meta));
  EXPECT_TRUE(std::equal(tail.biases.begin(), tail.biases.end(), whole.biases.begin() + 2 * meta));
}

TEST(GgufAffineTest, AScaleTheF16RewriteCannotHoldIsAnError) {
  std::vector<uint8_t> block = testing::random_gguf_blocks(GgufType::kQ8_0, 32, 1);
  const uint16_t big = float_to_f16(1000.f);  // -128 * 1000 overflows f16
  std::memcpy(block.data(), &big, 2);
  WeightMatrix w = testing::gguf_view(GgufType::kQ8_0, 1, 32, block);
  EXPECT_THROW(gguf_to_affine(w), Error);
  w.gguf_type = GgufType::kF16;
  EXPECT_FALSE(gguf_affine_supported(GgufType::kF16));
  EXPECT_THROW(gguf_to_affine(w), Error);
}

}  // namespace
}  // namespace qmlx
