// The K/V row formats (kernels/kv_row.h) and attention over them: int8 codes and scale follow
// the stated formula, the kernel reads every row type exactly as stored (prefill blocks, and
// decode's in-place path for each query-head grouping), prefill chunking changes no bit of an
// int8 cache's result, and the int8 quantization error against float64 attention over the
// unquantized K/V stays within a stated bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernels/attention.h"
#include "kernels/kv_row.h"
#include "test_util.h"

namespace qmlx {
namespace {

using testing::naive_attention;
using testing::random_vector;
using testing::relative_error;

// rows [P][Nkv][D] floats -> P cache rows of Nkv head rows of type t.
std::vector<uint8_t> store_rows(const std::vector<float>& x, int D, KvType t) {
  const size_t head = kv_head_bytes(t, D), rows = x.size() / D;
  std::vector<uint8_t> out(rows * head);
  for (size_t r = 0; r < rows; ++r) store_kv_head(x.data() + r * D, D, t, out.data() + r * head);
  return out;
}

// What the kernel must see: every head row decoded back to floats.
std::vector<float> load_rows(const std::vector<uint8_t>& bytes, int D, KvType t) {
  const size_t head = kv_head_bytes(t, D), rows = bytes.size() / head;
  std::vector<float> out(rows * D), buffer(D);
  for (size_t r = 0; r < rows; ++r) {
    const float* row = load_kv_head(bytes.data() + r * head, D, t, buffer.data());
    std::copy(row, row + D, out.begin() + r * D);
  }
  return out;
}

TEST(KvRowTest, Int8RowIsCodesThenAFloatScale) {
  const int D = 44;  // not a multiple of 8: the vector body and a scalar tail
  EXPECT_EQ(kv_head_bytes(KvType::kInt8, 256), 260u);
  EXPECT_EQ(kv_head_bytes(KvType::kBF16, 256), 512u);
  EXPECT_EQ(kv_head_bytes(KvType::kF32, 256), 1024u);
  std::vector<float> x = random_vector(D, 1, 3.f);
  x[5] = -9.5f;  // the largest magnitude: code -127
  std::vector<uint8_t> row(kv_head_bytes(KvType::kInt8, D));
  store_kv_head(x.data(), D, KvType::kInt8, row.data());
  float scale;
  std::memcpy(&scale, row.data() + D, 4);
  EXPECT_EQ(scale, 9.5f / 127.f);
  const int8_t* codes = reinterpret_cast<const int8_t*>(row.data());
  EXPECT_EQ(codes[5], -127);
  std::vector<float> buffer(D);
  const float* back = load_kv_head(row.data(), D, KvType::kInt8, buffer.data());
  for (int i = 0; i < D; ++i) {
    EXPECT_EQ(codes[i], int8_t(std::nearbyint(x[i] / scale))) << i;
    EXPECT_EQ(back[i], float(codes[i]) * scale) << i;
    EXPECT_LE(std::abs(back[i] - x[i]), scale / 2 * (1 + 1e-6f)) << i;
  }
}

TEST(KvRowTest, Int8ZeroRowStaysZero) {
  const int D = 16;
  std::vector<float> x(D, 0.f), buffer(D, 1.f);
  std::vector<uint8_t> row(kv_head_bytes(KvType::kInt8, D), 0xff);
  store_kv_head(x.data(), D, KvType::kInt8, row.data());
  const float* back = load_kv_head(row.data(), D, KvType::kInt8, buffer.data());
  for (int i = 0; i < D; ++i) EXPECT_EQ(back[i], 0.f);
}

struct Case {
  int T, pos0;
};

// Prefill blocks (T > 1, more keys than a key block) and decode's single row, at the 0.8B
// shape's head size and grouping (Nh / Nkv = 4, D = 256).
TEST(Int8AttentionTest, ReadsTheStoredRowsAndStaysCloseToFloat64) {
  const int Nh = 8, Nkv = 2, D = 256;
  for (Case c : {Case{150, 37}, Case{1, 300}, Case{2, 63}}) {
    SCOPED_TRACE("T=" + std::to_string(c.T) + " pos0=" + std::to_string(c.pos0));
    const int P = c.pos0 + c.T;
    auto q = random_vector(size_t(c.T) * Nh * D, 40 + c.T),
         k = random_vector(size_t(P) * Nkv * D, 41), v = random_vector(size_t(P) * Nkv * D, 42);
    AttentionShape s{c.T, Nh, Nkv, D, c.pos0, 1.f / std::sqrt(float(D))};
    const std::vector<double> exact = naive_attention(q, k, v, c.T, Nh, Nkv, D, c.pos0);

    std::vector<double> errors;
    for (KvType t : {KvType::kInt8, KvType::kBF16}) {
      std::vector<uint8_t> kq = store_rows(k, D, t), vq = store_rows(v, D, t);
      std::vector<float> out(q.size());
      attention(s, q.data(), kq.data(), vq.data(), t, out.data());
      // The kernel computes attention over exactly the values the rows hold (fp32 rounding).
      EXPECT_LT(relative_error(out, naive_attention(q, load_rows(kq, D, t), load_rows(vq, D, t),
                                                    c.T, Nh, Nkv, D, c.pos0)),
                1e-5);
      errors.push_back(relative_error(out, exact));
    }
    // Quantization error against float64 over the unquantized K/V (max |err| / max |out|):
    // int8 measures 0.4-1.3e-2 here (bf16: 2-4e-3); random normal rows are a hard case, as
    // their max/rms ratio, which sets the int8 step, is ~3.
    EXPECT_LT(errors[0], 2e-2);
    EXPECT_LT(errors[1], 5e-3);
  }
}

// Decode reads rows in place for head sizes that are multiples of 16, 4, 2 or 1 query heads of
// a group at a time, over several blocks of value rows.
TEST(KvRowAttentionTest, DecodeReadsEveryRowTypeInPlace) {
  const int D = 48, pos0 = 150, P = pos0 + 1;
  for (auto [Nh, Nkv] : {std::pair{8, 2}, std::pair{4, 2}, std::pair{3, 3}, std::pair{6, 2}}) {
    auto q = random_vector(size_t(Nh) * D, 60 + Nh), k = random_vector(size_t(P) * Nkv * D, 61),
         v = random_vector(size_t(P) * Nkv * D, 62);
    AttentionShape s{1, Nh, Nkv, D, pos0, 1.f / std::sqrt(float(D))};
    for (KvType t : {KvType::kF32, KvType::kF16, KvType::kBF16, KvType::kInt8}) {
      SCOPED_TRACE("Nh=" + std::to_string(Nh) + " Nkv=" + std::to_string(Nkv) + " type " +
                   std::to_string(int(t)));
      std::vector<uint8_t> kq = store_rows(k, D, t), vq = store_rows(v, D, t);
      std::vector<float> out(q.size());
      attention(s, q.data(), kq.data(), vq.data(), t, out.data());
      EXPECT_LT(relative_error(out, naive_attention(q, load_rows(kq, D, t), load_rows(vq, D, t), 1,
                                                    Nh, Nkv, D, pos0)),
                1e-5);
    }
  }
}

// As for bf16 (sequence_kernels_test): an int8 row is quantized on its own, so a query's result
// cannot depend on how the prompt was cut into prefill chunks.
TEST(Int8AttentionTest, ChunkingDoesNotChangeAnyBit) {
  const int T = 181, Nh = 4, Nkv = 1, D = 32;
  auto q = random_vector(size_t(T) * Nh * D, 50), k = random_vector(size_t(T) * Nkv * D, 51),
       v = random_vector(size_t(T) * Nkv * D, 52);
  std::vector<uint8_t> kq = store_rows(k, D, KvType::kInt8), vq = store_rows(v, D, KvType::kInt8);
  std::vector<float> whole(q.size()), pieces(q.size());
  AttentionShape s{T, Nh, Nkv, D, 0, 1.f / std::sqrt(float(D))};
  attention(s, q.data(), kq.data(), vq.data(), KvType::kInt8, whole.data());
  int done = 0;
  for (int n : {7, 64, 3, 100, 1, 6}) {
    AttentionShape piece{n, Nh, Nkv, D, done, s.scale};
    attention(piece, q.data() + size_t(done) * Nh * D, kq.data(), vq.data(), KvType::kInt8,
              pieces.data() + size_t(done) * Nh * D);
    done += n;
  }
  ASSERT_EQ(done, T);
  // Row 174, a piece of its own, runs the decode path, whose sums run in another order.
  const size_t decoded = size_t(174) * Nh * D, row = size_t(Nh) * D;
  EXPECT_TRUE(std::equal(whole.begin(), whole.begin() + decoded, pieces.begin()));
  EXPECT_TRUE(
      std::equal(whole.begin() + decoded + row, whole.end(), pieces.begin() + decoded + row));
  std::vector<float> a(whole.begin() + decoded, whole.begin() + decoded + row),
      b(pieces.begin() + decoded, pieces.begin() + decoded + row);
  EXPECT_LT(relative_error(b, a), 1e-6);
}

}  // namespace
}  // namespace qmlx
