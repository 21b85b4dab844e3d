// Session: resuming from an exported state, prefill in pieces, the two Gated DeltaNet forms,
// truncation, and the StateSource/StateSink seam.
#include "engine/session.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "base/error.h"
#include "tiny_model.h"

namespace qmlx {
namespace {

double relative_error(std::span<const float> a, std::span<const float> b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    num = std::max(num, std::abs(double(a[i]) - b[i]));
    den = std::max(den, std::abs(double(b[i])));
  }
  return num / den;
}

std::vector<int32_t> random_tokens(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = int32_t(rng() % 128);
  return t;
}

class SessionTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { dir_ = testing::make_temp_dir("session"); }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  std::shared_ptr<const Model> load() {
    std::string d = dir_ + "/" + GetParam();
    if (!std::filesystem::exists(d)) {
      testing::TinyModelSpec spec{GetParam(), "mlx"};
      spec.bits = 8;
      testing::write_tiny_model(d, spec);
    }
    return Model::load(d);
  }
  static SessionOptions f32() {
    SessionOptions o;
    o.kv_dtype = DType::kF32;
    return o;
  }
  static std::string dir_;
};
std::string SessionTest::dir_;

TEST_P(SessionTest, ExportImportContinuesIdentically) {
  auto model = load();
  auto tokens = random_tokens(40, 1);
  Session full(model, f32());
  full.prefill(std::span(tokens).first(25));
  SessionState snapshot = full.export_state();
  EXPECT_EQ(snapshot.position, 25);
  for (int i = 25; i < 40; ++i) full.decode(tokens[i]);

  Session resumed(model, f32());
  resumed.import_state(snapshot);
  EXPECT_EQ(resumed.position(), 25);
  EXPECT_EQ(std::vector<float>(resumed.logits().begin(), resumed.logits().end()), snapshot.logits);
  for (int i = 25; i < 40; ++i) resumed.decode(tokens[i]);
  EXPECT_EQ(std::vector<float>(resumed.logits().begin(), resumed.logits().end()),
            std::vector<float>(full.logits().begin(), full.logits().end()));
}

TEST_P(SessionTest, PrefillInOneCallInPiecesAndTokenByTokenAgree) {
  auto model = load();
  auto tokens = random_tokens(150, 2);
  SessionOptions big = f32();
  big.prefill_chunk = 1000;
  Session whole(model, big);
  whole.prefill(tokens);

  SessionOptions small = f32();
  small.prefill_chunk = 37;
  Session chunked(model, small);
  std::vector<std::pair<int64_t, int64_t>> progress;
  chunked.prefill(std::span(tokens).first(100), [&](int64_t done, int64_t total) {
    progress.push_back({done, total});
  });
  chunked.prefill(std::span(tokens).subspan(100));
  EXPECT_EQ(progress.size(), 3u);
  EXPECT_EQ(progress.back(), std::make_pair(int64_t(100), int64_t(100)));

  Session stepwise(model, f32());
  for (int32_t t : tokens) stepwise.decode(t);

  EXPECT_EQ(whole.position(), 150);
  // Prompt rows have one arithmetic however the prompt is split (model/row_kind.h).
  EXPECT_EQ(std::vector<float>(chunked.logits().begin(), chunked.logits().end()),
            std::vector<float>(whole.logits().begin(), whole.logits().end()));
  // Decoded tokens are generated rows: their matmuls multiply quantized weights by activations
  // rounded to int16 (kernels/int16_activations.h, ~2^-16 relative), prompt rows in fp32: the
  // oracle's tolerance.
  EXPECT_LT(relative_error(stepwise.logits(), whole.logits()), 1e-4);
}

// A prompt prefilled whole, or in chunks of a random size with an export at a random point
// imported into a new Session that prefills the rest (a checkpoint restored next turn): the
// same logits and state, bit for bit.
TEST_P(SessionTest, PromptSplitAndRestoredAnywhereEqualsTheWholePrefill) {
  auto model = load();
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 4; ++trial) {
    auto tokens = random_tokens(int(20 + rng() % 200), 12 + trial);
    SessionOptions big = f32();
    big.prefill_chunk = 1000;
    Session whole(model, big);
    whole.prefill(tokens);

    SessionOptions small = f32();
    small.prefill_chunk = int(1 + rng() % 64);
    const size_t cut = 1 + rng() % (tokens.size() - 1);
    Session first(model, small);
    first.prefill(std::span(tokens).first(cut));
    Session resumed(model, small);
    resumed.import_state(first.export_state());
    resumed.prefill(std::span(tokens).subspan(cut));

    const SessionState a = resumed.export_state(), b = whole.export_state();
    SCOPED_TRACE("chunk " + std::to_string(small.prefill_chunk) + ", cut at " +
                 std::to_string(cut));
    EXPECT_EQ(a.position, b.position);
    EXPECT_EQ(a.logits, b.logits);
    EXPECT_EQ(a.keys, b.keys);
    EXPECT_EQ(a.values, b.values);
    EXPECT_EQ(a.conv_states, b.conv_states);
    EXPECT_EQ(a.ssm_states, b.ssm_states);
  }
}

TEST_P(SessionTest, ChunkedAndRecurrentDeltaRuleAgree) {
  auto model = load();
  auto tokens = random_tokens(130, 3);
  SessionOptions rec = f32(), chk = f32();
  rec.delta_rule = DeltaRuleForm::kRecurrent;
  chk.delta_rule = DeltaRuleForm::kChunked;
  Session a(model, rec), b(model, chk);
  a.prefill(tokens);
  b.prefill(tokens);
  // An MoE expert that one token routes to runs the int16-activation decode kernel (see above).
  EXPECT_LT(relative_error(a.logits(), b.logits()), 1e-4);
}

TEST_P(SessionTest, CancelStopsBetweenChunks) {
  auto model = load();
  auto tokens = random_tokens(50, 4);
  SessionOptions o = f32();
  o.prefill_chunk = 10;
  Session s(model, o);
  std::atomic<bool> cancel{false};
  bool finished = s.prefill(
      tokens, [&](int64_t done, int64_t) { cancel = done >= 20; }, &cancel);
  EXPECT_FALSE(finished);
  EXPECT_EQ(s.position(), 20);
}

TEST_P(SessionTest, SourceAndSinkCopyTheState) {
  auto model = load();
  auto tokens = random_tokens(30, 5);
  Session a(model, f32());
  a.prefill(tokens);
  const StateLayout& l = a.layout();
  Session b(model, f32());
  b.reset(a.position());
  for (size_t i = 0; i < l.attention_layers.size(); ++i) {
    std::vector<uint8_t> k(30 * l.kv_row_bytes()), v(k.size());
    a.read_kv_rows(int(i), 0, 30, k.data(), v.data());
    b.write_kv_rows(int(i), 0, 30, k.data(), v.data());
  }
  for (size_t r = 0; r < l.recurrent_layers.size(); ++r) {
    std::vector<float> conv(l.conv_state_bytes() / 4), ssm(l.ssm_state_bytes() / 4);
    a.read_recurrent(int(r), conv.data(), ssm.data());
    b.write_recurrent(int(r), conv.data(), ssm.data());
  }
  b.set_logits(a.logits());
  a.decode(7);
  b.decode(7);
  EXPECT_EQ(std::vector<float>(a.logits().begin(), a.logits().end()),
            std::vector<float>(b.logits().begin(), b.logits().end()));
  EXPECT_THROW(a.read_kv_rows(0, 0, 1000, nullptr, nullptr), Error);
}

TEST_P(SessionTest, TruncateOnlyForAttentionOnlyModels) {
  auto model = load();
  auto tokens = random_tokens(20, 6);
  Session s(model, f32());
  s.prefill(tokens);
  if (s.layout().has_recurrent_state()) {
    EXPECT_THROW(s.truncate(10), Error);
    return;
  }
  Session reference(model, f32());
  reference.prefill(std::span(tokens).first(15));
  s.truncate(12);
  EXPECT_EQ(s.position(), 12);
  EXPECT_TRUE(s.logits().empty());
  s.prefill(std::span(tokens).subspan(12, 3));
  EXPECT_LT(relative_error(s.logits(), reference.logits()), 1e-6);
}

TEST_P(SessionTest, Bf16CacheStaysCloseToF32) {
  auto model = load();
  auto tokens = random_tokens(20, 7);
  Session exact(model, f32()), compact(model);  // default: bf16 K/V
  exact.prefill(tokens);
  compact.prefill(tokens);
  EXPECT_EQ(compact.layout().kv_dtype, DType::kBF16);
  EXPECT_LT(relative_error(compact.logits(), exact.logits()), 3e-2);
  SessionState s = compact.export_state();
  ASSERT_FALSE(s.keys.empty());
  EXPECT_EQ(s.keys[0].size(), 20 * compact.layout().kv_row_bytes());
}

// int8 K/V (kernels/kv_row.h): D codes and a float32 scale per row and head, about half of
// bf16's bytes; logits stay close to f32 K/V in prefill and decode, and greedy decoding agrees
// with bf16.
TEST_P(SessionTest, Int8CacheStaysCloseToF32InAboutHalfTheBytes) {
  auto model = load();
  auto tokens = random_tokens(70, 8);
  SessionOptions int8 = f32();
  int8.kv_dtype = DType::kInt8;
  Session exact(model, f32()), compact(model, int8);
  exact.prefill(tokens);
  compact.prefill(tokens);
  const StateLayout& l = compact.layout();
  EXPECT_EQ(l.kv_dtype, DType::kInt8);
  EXPECT_EQ(l.kv_row_bytes(), size_t(l.kv_heads) * (l.head_dim + 4));
  EXPECT_EQ(state_layout_of(*model, DType::kBF16).kv_row_bytes(),
            size_t(l.kv_heads) * l.head_dim * 2);
  EXPECT_LT(relative_error(compact.logits(), exact.logits()), 3e-2);
  for (int i = 0; i < 8; ++i) {
    exact.decode(tokens[i]);
    compact.decode(tokens[i]);
    EXPECT_LT(relative_error(compact.logits(), exact.logits()), 3e-2) << "decode step " << i;
  }
  SessionState s = compact.export_state();
  ASSERT_FALSE(s.keys.empty());
  EXPECT_EQ(s.keys[0].size(), 78 * l.kv_row_bytes());
}

TEST_P(SessionTest, Int8GreedyDecodingAgreesWithBf16) {
  auto model = load();
  auto prompt = random_tokens(40, 9);
  SessionOptions int8;
  int8.kv_dtype = DType::kInt8;
  auto greedy = [&](SessionOptions options) {
    Session s(model, options);
    s.prefill(prompt);
    std::vector<int32_t> out;
    for (int i = 0; i < 24; ++i) {
      out.push_back(
          int32_t(std::max_element(s.logits().begin(), s.logits().end()) - s.logits().begin()));
      s.decode(out.back());
    }
    return out;
  };
  EXPECT_EQ(greedy(int8), greedy(SessionOptions{}));
}

INSTANTIATE_TEST_SUITE_P(Architectures, SessionTest,
                         ::testing::Values("qwen3_5", "qwen3_5_moe", "qwen3_next", "qwen3"));

}  // namespace
}  // namespace qmlx
