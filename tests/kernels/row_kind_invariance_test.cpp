// The row-kind rule of kernels/matmul.h and kernels/attention.h: a prompt row and a generated
// row each have one arithmetic, so a row's output is bit-identical whatever else shares the
// call (how many rows, of which kind, split where). Equality here is memcmp, not a tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gguf_block_samples.h"
#include "kernels/affine_gemv.h"
#include "kernels/affine_tiles.h"
#include "kernels/attention.h"
#include "kernels/gated_delta.h"
#include "kernels/kv_row.h"
#include "kernels/matmul.h"
#include "test_util.h"
#include "tiny_model.h"

namespace qmlx {
namespace {

using testing::random_vector;

bool same_bits(const float* a, const float* b, size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

// One weight matrix with the buffers it points into.
struct StoredMatrix {
  std::string name;
  WeightMatrix m;
  std::vector<uint8_t> data, scales, biases;
  AffineTileStorage tiles;  // what a tiled m points into
};

std::vector<StoredMatrix> every_format(int rows, int cols) {
  std::vector<StoredMatrix> out;
  const auto w = random_vector(size_t(rows) * cols, 3);
  auto plain = [&](const std::string& name, WeightFormat f, testing::TensorBlob blob) {
    StoredMatrix s{name, {}, std::move(blob.bytes), {}, {}, {}};
    s.m.format = f;
    s.m.rows = rows;
    s.m.cols = cols;
    out.push_back(std::move(s));
  };
  plain("f32", WeightFormat::kF32, testing::f32_blob({rows, cols}, w));
  plain("bf16", WeightFormat::kBF16, testing::bf16_blob({rows, cols}, w));
  for (auto [bits, gs] : {std::pair{4, 32}, {4, 64}, {8, 64}, {8, 128}, {6, 64}}) {
    auto q = testing::quantize_affine(w, {}, rows, cols, bits, gs);
    StoredMatrix s{"affine" + std::to_string(bits) + "/" + std::to_string(gs),
                   {},
                   std::move(q.weight.bytes),
                   std::move(q.scales.bytes),
                   std::move(q.biases.bytes),
                   {}};
    s.m.format = WeightFormat::kAffine;
    s.m.rows = rows;
    s.m.cols = cols;
    s.m.bits = bits;
    s.m.group_size = gs;
    s.m.scale_type = ScalarType::kBF16;
    out.push_back(std::move(s));
  }
  for (GgufType t : {GgufType::kQ8_0, GgufType::kQ4_K, GgufType::kQ6_K, GgufType::kQ4_0}) {
    StoredMatrix s{std::string("gguf ") + gguf_type_name(t),
                   {},
                   testing::random_gguf_blocks(t, size_t(rows) * cols, 2),
                   {},
                   {},
                   {}};
    s.m.format = WeightFormat::kGguf;
    s.m.gguf_type = t;
    s.m.rows = rows;
    s.m.cols = cols;
    out.push_back(std::move(s));
  }
  for (StoredMatrix& s : out) {
    s.m.data = s.data.data();
    if (!s.scales.empty()) s.m.scales = s.scales.data();
    if (!s.biases.empty()) s.m.biases = s.biases.data();
  }
  // The 4- and 8-bit and Q8_0 ones again in 16-row tiles (kernels/affine_tiles.h).
  const size_t stored = out.size();
  for (size_t i = 0; i < stored; ++i) {
    const bool q8_0 = q8_0_tiles_supported(out[i].m);
    if (!affine_tiles_supported(out[i].m) && !q8_0) continue;
    StoredMatrix s{out[i].name + " tiled", {}, {}, {}, {}, {}};
    s.m = q8_0 ? tile_q8_0_matrix(out[i].m, s.tiles) : tile_affine_matrix(out[i].m, s.tiles);
    out.push_back(std::move(s));
  }
  return out;
}

// Rows [first, first + n) of x computed in one call with `generated` of them generated rows.
std::vector<float> rows_of_call(const WeightMatrix& m, const std::vector<float>& x, int first,
                                int n, int generated, bool serial) {
  std::vector<float> y(size_t(n) * m.rows);
  const float* xs = x.data() + size_t(first) * m.cols;
  if (serial)
    matmul_serial(xs, n, m, y.data(), generated);
  else
    matmul(xs, n, m, y.data(), generated);
  return y;
}

TEST(RowKindInvarianceTest, MatmulRowsDoNotDependOnTheirCall) {
  // 70 rows: more than one 16-row panel with a partial one, and GEMV blocks.
  const int rows = 70, cols = 512, T = 23;
  std::mt19937 rng(7);
  for (const StoredMatrix& s : every_format(rows, cols)) {
    SCOPED_TRACE(s.name);
    const auto x = random_vector(size_t(T) * cols, 11);
    // Reference: every row alone, as a prompt row and as a generated row.
    std::vector<std::vector<float>> prompt_alone(T), generated_alone(T);
    for (int t = 0; t < T; ++t) {
      prompt_alone[t] = rows_of_call(s.m, x, t, 1, 0, false);
      generated_alone[t] = rows_of_call(s.m, x, t, 1, 1, false);
    }
    // The two arithmetics differ (otherwise this test could not tell them apart) except for
    // the float formats' rows that happen to agree; the quantized ones must differ somewhere.
    if (s.m.format == WeightFormat::kAffine) {
      bool any_differs = false;
      for (int t = 0; t < T; ++t)
        any_differs |= !same_bits(prompt_alone[t].data(), generated_alone[t].data(), rows);
      EXPECT_TRUE(any_differs);
    }
    // Random calls: a window of rows, its tail generated.
    for (int trial = 0; trial < 12; ++trial) {
      const int first = int(rng() % T), n = 1 + int(rng() % (T - first));
      const int generated = int(rng() % (n + 1));
      const bool serial = trial % 3 == 0;
      const auto y = rows_of_call(s.m, x, first, n, generated, serial);
      for (int i = 0; i < n; ++i) {
        const auto& expected =
            i >= n - generated ? generated_alone[first + i] : prompt_alone[first + i];
        ASSERT_TRUE(same_bits(y.data() + size_t(i) * rows, expected.data(), rows))
            << "row " << first + i << " in a call of " << n << " rows, " << generated
            << " generated";
      }
    }
  }
}

// matmul_many (several matrices over one input) gives each matrix exactly matmul()'s rows, in
// any mix of formats, whether or not the matrices can share the prepared generated rows.
TEST(RowKindInvarianceTest, ManyMatricesOverOneInputAreEachTheirOwnMatmul) {
  const int cols = 512;
  const std::vector<StoredMatrix> big = every_format(70, cols), small = every_format(21, cols);
  const size_t n = big.size();
  for (size_t i = 0; i < n; ++i) {
    const WeightMatrix* ws[] = {&big[i].m, &small[(i + 1) % n].m, &big[(i + 3) % n].m,
                                &small[i].m};
    SCOPED_TRACE(big[i].name + ", " + small[(i + 1) % n].name + ", " + big[(i + 3) % n].name);
    for (auto [T, generated] : {std::pair{5, 2}, {3, 3}, {1, 1}, {4, 0}}) {
      const auto x = random_vector(size_t(T) * cols, 40 + T);
      std::vector<std::vector<float>> together(4), alone(4);
      std::vector<MatmulOutput> outputs;
      for (int j = 0; j < 4; ++j) {
        together[j].resize(size_t(T) * ws[j]->rows);
        alone[j].resize(together[j].size());
        outputs.push_back({ws[j], together[j].data()});
        matmul(x.data(), T, *ws[j], alone[j].data(), generated);
      }
      matmul_many(x.data(), T, outputs, generated);
      for (int j = 0; j < 4; ++j)
        ASSERT_TRUE(same_bits(together[j].data(), alone[j].data(), alone[j].size()))
            << "matrix " << j << ", T " << T << ", " << generated << " generated";
    }
  }
}

// The decode GEMV's two instruction sets (AVX2 and AVX-512 VNNI) give the same bits for every
// affine width and group size, with whole blocks of 8 groups and a tail, for any number of rows
// per call: a checkpoint taken on one machine continues exactly on another.
TEST(RowKindInvarianceTest, AffineGemvIsTheSameOnEveryInstructionSet) {
  if (gemv_isa() != GemvIsa::kAvx512Vnni) GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
  const int rows = 37;
  for (int cols : {512, 640}) {
    for (const StoredMatrix& s : every_format(rows, cols)) {
      if (s.m.format != WeightFormat::kAffine) continue;
      SCOPED_TRACE(s.name + " cols " + std::to_string(cols));
      const auto x = random_vector(size_t(9) * cols, 5);
      std::vector<Int16Activations> in;
      for (int b = 0; b < 9; ++b)
        in.push_back(prepare_affine_gemv_input(x.data() + size_t(b) * cols, s.m));
      for (int B : {1, 2, 3, 4, 5, 9}) {
        std::vector<float> avx2(size_t(B) * rows), avx512(size_t(B) * rows);
        affine_gemv_rows(in.data(), B, s.m, 0, rows, avx2.data(), rows, GemvIsa::kAvx2);
        affine_gemv_rows(in.data(), B, s.m, 0, rows, avx512.data(), rows, GemvIsa::kAvx512Vnni);
        ASSERT_TRUE(same_bits(avx2.data(), avx512.data(), avx2.size())) << B << " rows";
        // And a row's result does not depend on the rows beside it.
        std::vector<float> alone(rows);
        affine_gemv_rows(in.data() + B - 1, 1, s.m, 0, rows, alone.data(), rows,
                         GemvIsa::kAvx512Vnni);
        ASSERT_TRUE(same_bits(alone.data(), avx512.data() + size_t(B - 1) * rows, rows));
      }
    }
  }
}

// Attention over a cache of P positions: the output rows of queries [q0, q0 + n).
std::vector<float> attend(const std::vector<float>& q, const std::vector<uint8_t>& k,
                          const std::vector<uint8_t>& v, KvType type, int Nh, int Nkv, int D,
                          int q0, int n, bool generated) {
  AttentionShape s{n, Nh, Nkv, D, q0, 1.f / std::sqrt(float(D))};
  s.generated = generated;
  std::vector<float> out(size_t(n) * Nh * D);
  attention(s, q.data() + size_t(q0) * Nh * D, k.data(), v.data(), type, out.data());
  return out;
}

TEST(RowKindInvarianceTest, AttentionRowsDoNotDependOnTheirCall) {
  const int Nh = 8, Nkv = 2, D = 64, P = 150;
  const size_t width = size_t(Nh) * D;
  std::mt19937 rng(5);
  for (KvType type : {KvType::kF32, KvType::kBF16, KvType::kInt8}) {
    SCOPED_TRACE(int(type));
    const auto q = random_vector(size_t(P) * width, 1);
    const auto kf = random_vector(size_t(P) * Nkv * D, 2), vf = random_vector(kf.size(), 3);
    const size_t head = kv_head_bytes(type, D);
    std::vector<uint8_t> k(size_t(P) * Nkv * head), v(k.size());
    for (size_t r = 0; r < size_t(P) * Nkv; ++r) {
      store_kv_head(kf.data() + r * D, D, type, k.data() + r * head);
      store_kv_head(vf.data() + r * D, D, type, v.data() + r * head);
    }
    for (bool generated : {false, true}) {
      SCOPED_TRACE(generated ? "generated" : "prompt");
      std::vector<std::vector<float>> alone(P);
      for (int t = 0; t < P; ++t) alone[t] = attend(q, k, v, type, Nh, Nkv, D, t, 1, generated);
      for (int trial = 0; trial < 10; ++trial) {
        const int first = int(rng() % P), n = 1 + int(rng() % std::min(P - first, 90));
        const auto out = attend(q, k, v, type, Nh, Nkv, D, first, n, generated);
        for (int i = 0; i < n; ++i)
          ASSERT_TRUE(same_bits(out.data() + i * width, alone[first + i].data(), width))
              << "query " << first + i << " in a call of " << n;
      }
    }
  }
}

// The Gated DeltaNet recurrence runs prompt and generated tokens alike: a token's output and the
// state after it are the same whether the tokens come in one call, in pieces of any size, or
// one at a time.
TEST(RowKindInvarianceTest, GatedDeltaTokensDoNotDependOnTheirCall) {
  for (auto [Dk, Dv] : {std::pair{128, 128}, {24, 20}}) {
    SCOPED_TRACE(std::to_string(Dk) + "x" + std::to_string(Dv));
    const int T = 90, Hk = 2, Hv = 4;
    const size_t stride = size_t(2 * Hk * Dk + Hv * Dv);
    auto rows = random_vector(size_t(T) * stride, 1, 0.2f);
    auto g = random_vector(size_t(T) * Hv, 2, 1.f), beta = random_vector(size_t(T) * Hv, 3, 1.f);
    // As in the model: q and k of unit length, decays in (0, 1], beta in (0, 1).
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < 2 * Hk; ++h) {
        float* x = rows.data() + size_t(t) * stride + size_t(h) * Dk;
        float norm = 0.f;
        for (int i = 0; i < Dk; ++i) norm += x[i] * x[i];
        for (int i = 0; i < Dk; ++i) x[i] /= std::sqrt(norm);
      }
    for (auto& x : g) x = -std::fabs(x);
    for (auto& x : beta) x = 1.f / (1.f + std::exp(-x));
    const auto initial = random_vector(size_t(Hv) * Dv * Dk, 4, 0.3f);
    // Tokens [t0, t0 + n) in one call, continuing `state`.
    auto run = [&](int t0, int n, std::vector<float>& state, float* out) {
      GatedDeltaInputs in;
      in.T = n, in.Hk = Hk, in.Hv = Hv, in.Dk = Dk, in.Dv = Dv;
      in.q = rows.data() + size_t(t0) * stride;
      in.k = in.q + Hk * Dk;
      in.v = in.q + 2 * Hk * Dk;
      in.row_stride = stride;
      in.g = g.data() + size_t(t0) * Hv;
      in.beta = beta.data() + size_t(t0) * Hv;
      gated_delta_recurrent(in, state.data(), out + size_t(t0) * Hv * Dv);
    };
    std::vector<float> whole_state = initial, whole(size_t(T) * Hv * Dv);
    run(0, T, whole_state, whole.data());
    std::mt19937 rng(9);
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<float> state = initial, out(whole.size());
      for (int t0 = 0; t0 < T;) {
        const int n = trial == 0 ? 1 : std::min(T - t0, 1 + int(rng() % 40));
        run(t0, n, state, out.data());
        t0 += n;
      }
      EXPECT_TRUE(same_bits(out.data(), whole.data(), whole.size())) << "trial " << trial;
      EXPECT_TRUE(same_bits(state.data(), whole_state.data(), state.size())) << "trial " << trial;
    }
  }
}

}  // namespace
}  // namespace qmlx
