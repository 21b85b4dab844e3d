// SpeculativeDecoder: greedy output equals plain decoding token for token and logits bit for bit
// (dense, MoE and Qwen3-Next; f32 and bf16 K/V; k = 1..3; both rollback methods; drafts from the
// head and drafts driven to any acceptance), a caller that stops early leaves the session as
// plain decoding would, the per-row state views match plain sessions, a restore restarts the
// head, and with sampling the speculative rule leaves the output distribution exact.
#include "engine/speculative.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "base/error.h"
#include "modelgen/model_writer.h"
#include "speculative_harness.h"
#include "tiny_model.h"

namespace qmlx {
namespace {

using modelgen::Arch;

std::vector<int32_t> random_tokens(size_t n, std::mt19937_64& rng) {
  std::vector<int32_t> t(n);
  for (auto& x : t) x = int32_t(rng() % 600);
  return t;
}

using testing::expect_same;
using testing::Generation;
using testing::options_of;
using testing::plain_greedy;
using testing::plain_session;
using testing::speculative;

class SpeculativeTest : public ::testing::TestWithParam<std::tuple<Arch, DType>> {
 protected:
  static void SetUpTestSuite() { dir_ = testing::make_temp_dir("speculative"); }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  static std::shared_ptr<const Model> load(Arch arch) {
    const std::string d = dir_ + "/" + std::to_string(int(arch));
    if (!std::filesystem::exists(d)) {
      modelgen::ModelOptions o;
      o.arch = arch;
      o.shape = modelgen::default_shape(arch);
      o.shape.mtp = true;
      o.seed = 11;
      modelgen::write_random_model(o, d);
    }
    return Model::load(d);
  }
  static inline std::string dir_;
};

TEST_P(SpeculativeTest, GreedyEqualsPlainDecodingTokenForTokenAndBitwise) {
  const auto [arch, kv] = GetParam();
  auto model = load(arch);
  std::mt19937_64 rng(7);
  int64_t accepted = 0, drafted = 0;
  for (int prompt_index = 0; prompt_index < 4; ++prompt_index) {
    const auto prompt = random_tokens(3 + rng() % 40, rng);
    const size_t n = 20;
    const Generation plain = plain_greedy(model, kv, prompt, n);
    // Drafts for position p: the plain run's token there, or (a third of the time) another one.
    std::vector<int32_t> context = prompt;
    context.insert(context.end(), plain.tokens.begin(), plain.tokens.end());
    std::mt19937_64 draft_rng(prompt_index);
    auto driven = [&](int64_t position, int32_t) {
      const int32_t right = position < int64_t(context.size()) ? context[position] : 0;
      return draft_rng() % 3 == 0 ? (right + 1) % 600 : right;
    };
    for (int k = 1; k <= 3; ++k)
      for (auto rollback : {RollbackMethod::kKeepStates, RollbackMethod::kRecompute})
        for (bool drive : {false, true}) {
          Session session(model, options_of(kv));  // prefill split unlike the plain run
          SpeculativeOptions o;
          o.draft_tokens = k;
          o.rollback = rollback;
          if (drive) o.draft_override = driven;
          SpeculativeDecoder decoder(session, o);
          decoder.prefill(prompt);
          Sampler sampler({}, -1);
          const std::string what =
              "prompt " + std::to_string(prompt_index) + " k=" + std::to_string(k) +
              (drive ? " driven" : " head") +
              (rollback == RollbackMethod::kKeepStates ? " keep" : " recompute");
          expect_same(plain, speculative(decoder, sampler, n), what);
          EXPECT_EQ(session.position(), int64_t(prompt.size() + n - 1)) << what;
          if (drive) {
            accepted += decoder.counts().accepted;
            drafted += decoder.counts().drafted;
          }
        }
  }
  // The driven drafts exercised both acceptance and rollback at every row.
  EXPECT_GT(accepted, drafted / 3);
  EXPECT_LT(accepted, drafted);
}

TEST_P(SpeculativeTest, StoppingEarlyLeavesThePlainState) {
  const auto [arch, kv] = GetParam();
  auto model = load(arch);
  std::mt19937_64 rng(3);
  const auto prompt = random_tokens(17, rng);
  const size_t n = 16;
  const Generation plain = plain_greedy(model, kv, prompt, n);
  std::vector<int32_t> context = prompt;
  context.insert(context.end(), plain.tokens.begin(), plain.tokens.end());
  Session session(model, options_of(kv, 7));
  SpeculativeOptions o;
  o.draft_tokens = 3;
  o.draft_override = [&](int64_t position, int32_t) { return context.at(position); };
  SpeculativeDecoder decoder(session, o);
  decoder.prefill(prompt);
  Sampler sampler({}, -1);
  // Every step's drafts are right (4 tokens), but the caller uses 1, 2, 3, 1, 2, 3, ...
  expect_same(plain,
              speculative(decoder, sampler, n, [](size_t step) { return int(step % 3) + 1; }),
              "stopping early");
  testing::expect_same_state(
      plain_session(model, kv, prompt, std::span(plain.tokens).first(n - 1))->export_state(),
      session.export_state(), "stopping early");
}

TEST_P(SpeculativeTest, StateAfterEachRowIsThePlainSessionThere) {
  const auto [arch, kv] = GetParam();
  auto model = load(arch);
  std::mt19937_64 rng(5);
  const auto prompt = random_tokens(9, rng);
  const Generation plain = plain_greedy(model, kv, prompt, 8);
  std::vector<int32_t> context = prompt;
  context.insert(context.end(), plain.tokens.begin(), plain.tokens.end());
  Session session(model, options_of(kv, 7));
  SpeculativeOptions o;
  o.draft_tokens = 4;
  o.draft_override = [&](int64_t position, int32_t) { return context.at(position); };
  SpeculativeDecoder decoder(session, o);
  decoder.prefill(prompt);
  Sampler sampler({}, -1);
  const SpeculativeStep& s = decoder.step(plain.tokens[0], sampler, {});
  ASSERT_EQ(s.tokens.size(), 5u);
  const StateLayout& l = session.layout();
  for (int fed = 1; fed <= 5; ++fed) {
    const StateSource& view = decoder.state_after(fed);
    const auto plain_one = plain_session(model, kv, prompt, std::span(plain.tokens).first(fed));
    const Session& reference = *plain_one;
    ASSERT_EQ(view.position(), reference.position());
    for (size_t r = 0; r < l.recurrent_layers.size(); ++r) {
      std::vector<float> c1(l.conv_state_bytes() / 4), s1(l.ssm_state_bytes() / 4), c2 = c1,
                                                                                    s2 = s1;
      view.read_recurrent(int(r), c1.data(), s1.data());
      reference.read_recurrent(int(r), c2.data(), s2.data());
      EXPECT_EQ(c1, c2) << "fed " << fed;
      EXPECT_EQ(s1, s2) << "fed " << fed;
    }
    EXPECT_EQ(std::vector<float>(view.logits().begin(), view.logits().end()),
              std::vector<float>(reference.logits().begin(), reference.logits().end()));
  }
}

TEST_P(SpeculativeTest, ARestoredStateRestartsTheHeadAndStaysExact) {
  const auto [arch, kv] = GetParam();
  auto model = load(arch);
  std::mt19937_64 rng(9);
  const auto prompt = random_tokens(30, rng);
  const Generation plain = plain_greedy(model, kv, prompt, 12);
  Session donor(model, options_of(kv, 7));
  donor.prefill(std::span(prompt).first(20));
  const SessionState checkpoint = donor.export_state();

  Session session(model, options_of(kv, 7));
  SpeculativeOptions o;
  o.draft_tokens = 2;
  SpeculativeDecoder decoder(session, o);
  decoder.prefill(random_tokens(25, rng));  // another conversation first
  session.import_state(checkpoint);         // then a restore, as the cache does
  decoder.prefill(std::span(prompt).subspan(20));
  Sampler sampler({}, -1);
  expect_same(plain, speculative(decoder, sampler, 12), "after a restore");
}

// A constraint as a reply grammar is one: the next token's id may not be congruent mod 3 with
// the last one's, and every fifth token is forced (to kForcedToken) by the caller, as a
// reasoning closed in time is. It holds the reply's tokens: the caller's and, tentatively,
// the step's.
class ModThreeConstraint : public TokenConstraint {
 public:
  static constexpr int32_t kForcedToken = 7;
  static bool forced_at(size_t index) { return index % 5 == 4; }
  std::span<const float> allowed(std::span<const float> logits) override {
    masked_.assign(logits.begin(), logits.end());
    if (!tokens_.empty())
      for (size_t id = 0; id < masked_.size(); ++id)
        if (int32_t(id) % 3 == tokens_.back() % 3) masked_[id] = -INFINITY;
    return masked_;
  }
  bool free() const override { return !forced_at(tokens_.size()); }
  void push(int32_t token) override { tokens_.push_back(token); }
  void pop(int n) override {
    ASSERT_LE(size_t(n), tokens_.size() - committed_);
    tokens_.resize(tokens_.size() - size_t(n));
  }
  // The caller takes `token` (not undone by pop()).
  void take(int32_t token) {
    ASSERT_EQ(tokens_.size(), committed_) << "a step left tokens pushed";
    tokens_.push_back(token);
    ++committed_;
  }

 private:
  std::vector<int32_t> tokens_;
  size_t committed_ = 0;
  std::vector<float> masked_;
};

// Plain constrained decoding: forced tokens where the constraint forces, else the sampler over
// the allowed row.
Generation plain_constrained(std::shared_ptr<const Model> model, DType kv,
                             std::span<const int32_t> prompt, size_t n, Sampler& sampler) {
  Session session(model, options_of(kv, 7));
  session.prefill(prompt);
  ModThreeConstraint constraint;
  Generation g;
  while (true) {
    auto logits = session.logits();
    g.logits.emplace_back(logits.begin(), logits.end());
    const int32_t token = constraint.free() ? sampler.sample(constraint.allowed(logits), g.tokens)
                                            : ModThreeConstraint::kForcedToken;
    g.tokens.push_back(token);
    constraint.take(token);
    if (g.tokens.size() == n) return g;
    session.decode(token);
  }
}

// The same through `decoder` (prefilled by the caller), as the server's decode loop runs it.
Generation speculative_constrained(SpeculativeDecoder& decoder, Sampler& sampler, size_t n) {
  ModThreeConstraint constraint;
  Generation g;
  auto take = [&](int32_t token, std::span<const float> logits) {
    g.tokens.push_back(token);
    g.logits.emplace_back(logits.begin(), logits.end());
    constraint.take(token);
  };
  take(sampler.sample(constraint.allowed(decoder.session().logits()), g.tokens),
       decoder.session().logits());
  while (g.tokens.size() < n) {
    const int room = int(n - g.tokens.size());
    const SpeculativeStep& s =
        decoder.step(g.tokens.back(), sampler, g.tokens, room - 1, &constraint);
    if (s.tokens.empty()) {  // the next token is forced: its row is the session's
      EXPECT_FALSE(constraint.free());
      take(ModThreeConstraint::kForcedToken, decoder.session().logits());
      continue;
    }
    const int used = std::min<int>(int(s.tokens.size()), room);
    for (int i = 0; i < used; ++i) take(s.tokens[i], s.logits[i]);
    decoder.keep(used);
  }
  return g;
}

TEST_P(SpeculativeTest, ConstrainedGreedyEqualsPlainConstrainedDecoding) {
  const auto [arch, kv] = GetParam();
  auto model = load(arch);
  std::mt19937_64 rng(13);
  int64_t accepted = 0, drafted = 0;
  for (int prompt_index = 0; prompt_index < 3; ++prompt_index) {
    const auto prompt = random_tokens(3 + rng() % 30, rng);
    const size_t n = 24;
    Sampler plain_sampler({}, -1);
    const Generation plain = plain_constrained(model, kv, prompt, n, plain_sampler);
    // Drafts: the plain run's token, or (a third of the time) one the constraint refuses there.
    std::vector<int32_t> context = prompt;
    context.insert(context.end(), plain.tokens.begin(), plain.tokens.end());
    std::mt19937_64 draft_rng(prompt_index);
    auto driven = [&](int64_t position, int32_t) {
      const int32_t right = position < int64_t(context.size()) ? context[position] : 0;
      return draft_rng() % 3 == 0 ? context[position - 1] : right;
    };
    for (int k = 1; k <= 3; ++k)
      for (bool drive : {false, true}) {
        Session session(model, options_of(kv));
        SpeculativeOptions o;
        o.draft_tokens = k;
        if (drive) o.draft_override = driven;
        SpeculativeDecoder decoder(session, o);
        decoder.prefill(prompt);
        Sampler sampler({}, -1);
        const std::string what = "prompt " + std::to_string(prompt_index) +
                                 " k=" + std::to_string(k) + (drive ? " driven" : " head");
        expect_same(plain, speculative_constrained(decoder, sampler, n), what);
        EXPECT_EQ(session.position(), int64_t(prompt.size() + n - 1)) << what;
        if (drive) {
          accepted += decoder.counts().accepted;
          drafted += decoder.counts().drafted;
        }
      }
  }
  EXPECT_GT(accepted, drafted / 3);
  EXPECT_LT(accepted, drafted);
}

INSTANTIATE_TEST_SUITE_P(Models, SpeculativeTest,
                         ::testing::Combine(::testing::Values(Arch::kQwen35, Arch::kQwen35Moe,
                                                              Arch::kQwen3Next),
                                            ::testing::Values(DType::kF32, DType::kBF16)));

// The output distribution under sampling: the two tokens after a fixed one, drawn many times
// speculatively (k = 2, drafts from the head), against the exact distribution computed from the
// main model's own logits with the same sampler settings. Eight choosable ids keep the 64
// outcomes countable and lets the random head's distribution overlap the model's, so drafts are
// both accepted and rejected; the presence penalty sees the drafts. Seeds are fixed, so the
// result is deterministic; the bound is the chi-square quantile for p = 1e-6.
// With `constrained`, a ModThreeConstraint holds both tokens (as it holds plain decoding's),
// so drafts the mask refuses are never drawn and p, q are the masked distributions.
void expect_exact_output_distribution(bool constrained) {
  const std::string dir = testing::make_temp_dir("speculative_sampling");
  modelgen::ModelOptions mo;
  mo.arch = Arch::kQwen35;
  mo.shape = modelgen::default_shape(mo.arch);
  mo.shape.mtp = true;
  mo.shape.layers = 2;  // one Gated DeltaNet and one attention layer: fast enough for many draws
  mo.shape.full_attention_interval = 2;
  mo.seed = 4;
  modelgen::write_random_model(mo, dir);
  auto model = Model::load(dir);
  std::filesystem::remove_all(dir);

  SamplingParams params;
  params.temperature = 1.5f;
  params.presence_penalty = 0.3f;
  const std::vector<int32_t> prompt = {5, 1, 3};
  const int32_t first = 4;
  const int32_t kLastId = 7;  // ids 0..7 only, as if the rest were padding rows
  // The mask plain decoding applies after `history` (its last token).
  std::vector<float> masked;
  auto allowed = [&](std::span<const float> logits, const std::vector<int32_t>& history) {
    masked.assign(logits.begin(), logits.end());
    if (constrained)
      for (size_t id = 0; id < masked.size(); ++id)
        if (int32_t(id) % 3 == history.back() % 3) masked[id] = -INFINITY;
    return std::span<const float>(masked);
  };

  // Exact: P(a, b) = p(a | first) p(b | first, a), each the sampler's own distribution.
  Session base(model, options_of(DType::kF32));
  base.prefill(prompt);
  base.decode(first);
  Sampler exact_sampler(params, kLastId);
  std::map<std::pair<int32_t, int32_t>, double> expected;
  const std::vector<int32_t> h1 = {first};
  const Candidates pa = exact_sampler.candidates(allowed(base.logits(), h1), h1);
  for (int32_t a : pa.ids) {
    if (!(pa.probability(a) > 0)) continue;  // refused: weight exp(-inf)
    Session s(model, options_of(DType::kF32));
    s.import_state(base.export_state());
    s.decode(a);
    const std::vector<int32_t> h2 = {first, a};
    const Candidates pb = exact_sampler.candidates(allowed(s.logits(), h2), h2);
    for (int32_t b : pb.ids)
      if (pb.probability(b) > 0) expected[{a, b}] = pa.probability(a) * pb.probability(b);
  }
  // 8 ids; constrained, 5 after `first` (4) and 5 or 6 after each of those.
  ASSERT_EQ(expected.size(), constrained ? 27u : 64u);

  Session session(model, options_of(DType::kF32));
  SpeculativeOptions o;
  o.draft_tokens = 2;
  SpeculativeDecoder decoder(session, o);
  Sampler sampler(params, kLastId);
  const int draws = 3000;
  std::map<std::pair<int32_t, int32_t>, int> seen;
  for (int n = 0; n < draws; ++n) {
    session.reset(0);
    decoder.prefill(prompt);
    std::vector<int32_t> out = {first};
    ModThreeConstraint constraint;  // forces its fifth token: past these three
    constraint.take(first);
    while (out.size() < 3) {
      const SpeculativeStep& s = decoder.step(out.back(), sampler, out, kMaxDraftTokens,
                                              constrained ? &constraint : nullptr);
      for (int32_t t : s.tokens)
        if (out.size() < 3) {
          out.push_back(t);
          constraint.take(t);
        }
    }
    ++seen[{out[1], out[2]}];
  }
  double chi2 = 0;
  for (const auto& [pair, p] : expected) {
    const double e = p * draws;
    const double d = seen[pair] - e;
    chi2 += d * d / e;
  }
  // Nothing outside the support (a refused token) was ever drawn.
  for (const auto& [pair, count] : seen)
    EXPECT_TRUE(expected.count(pair)) << pair.first << "," << pair.second;
  // The chi-square quantile for p = 1e-6 (Wilson-Hilferty; z = 4.753) at 63 or 26 degrees of
  // freedom: 131.7 or 76.2.
  const double dof = double(expected.size() - 1), h = 2 / (9 * dof);
  EXPECT_LT(chi2, dof * std::pow(1 - h + 4.753 * std::sqrt(h), 3));
  // The rule was exercised both ways.
  const SpeculativeCounts& c = decoder.counts();
  EXPECT_GT(c.accepted, c.drafted / 10) << c.drafted << " drafted";
  EXPECT_LT(c.accepted, c.drafted * 9 / 10) << c.drafted << " drafted";
  std::printf("chi2 %.1f, %lld of %lld drafts accepted in %lld steps\n", chi2,
              (long long)c.accepted, (long long)c.drafted, (long long)c.steps);
}

TEST(SpeculativeSamplingTest, OutputDistributionIsExact) {
  expect_exact_output_distribution(false);
}

TEST(SpeculativeSamplingTest, ConstrainedOutputDistributionIsExact) {
  expect_exact_output_distribution(true);
}

TEST(SpeculativeOptionsTest, BadSettingsAreRefused) {
  const std::string dir = testing::make_temp_dir("speculative_options");
  modelgen::ModelOptions mo;
  mo.arch = Arch::kQwen35;
  mo.shape = modelgen::default_shape(mo.arch);
  modelgen::write_random_model(mo, dir + "/plain");
  mo.shape.mtp = true;
  modelgen::write_random_model(mo, dir + "/mtp");
  Session plain(Model::load(dir + "/plain"));
  EXPECT_THROW(SpeculativeDecoder(plain, {}), Error);
  Session with_head(Model::load(dir + "/mtp"));
  for (int k : {0, 5}) {
    SpeculativeOptions o;
    o.draft_tokens = k;
    EXPECT_THROW(SpeculativeDecoder(with_head, o), Error) << k;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace qmlx
