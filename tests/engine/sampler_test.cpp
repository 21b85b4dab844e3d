#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <tuple>

namespace qmlx {
namespace {

TEST(SamplerTest, GreedyPicksArgmaxWithinTheVocabulary) {
  std::vector<float> logits = {0.1f, 2.f, 0.5f, 9.f};  // id 3 is a padding row
  Sampler all({}, -1), limited({}, 2);
  EXPECT_EQ(all.sample(logits), 3);
  EXPECT_EQ(limited.sample(logits), 1);
}

TEST(SamplerTest, SeedReproducesAndDistributionMatchesSoftmax) {
  std::vector<float> logits = {1.f, 2.f, 0.f};
  SamplingParams p;
  p.temperature = 1.f;
  p.seed = 42;
  Sampler a(p, -1), b(p, -1);
  std::map<int, int> counts;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    int32_t x = a.sample(logits);
    EXPECT_EQ(x, b.sample(logits));
    ++counts[x];
  }
  double z = std::exp(1.0) + std::exp(2.0) + 1.0;
  EXPECT_NEAR(counts[0] / double(n), std::exp(1.0) / z, 0.02);
  EXPECT_NEAR(counts[1] / double(n), std::exp(2.0) / z, 0.02);
  EXPECT_NEAR(counts[2] / double(n), 1.0 / z, 0.02);
}

TEST(SamplerTest, FiltersCutTheTail) {
  std::vector<float> logits = {3.f, 2.9f, 0.f, -1.f};
  SamplingParams p;
  p.temperature = 1.f;
  p.top_k = 2;
  Sampler k(p, -1);
  p.top_k = 0;
  p.top_p = 0.3f;  // the top token alone carries more than 0.3
  Sampler top_p(p, -1);
  p.top_p = 1.f;
  p.min_p = 0.5f;  // only tokens with p >= 0.5 * p_max
  Sampler min_p(p, -1);
  for (int i = 0; i < 500; ++i) {
    EXPECT_LE(k.sample(logits), 1);
    EXPECT_EQ(top_p.sample(logits), 0);
    EXPECT_LE(min_p.sample(logits), 1);
  }
}

TEST(SamplerTest, PenaltiesDemoteRepeatedTokens) {
  std::vector<float> logits = {2.f, 1.9f, 0.f};
  std::vector<int32_t> history = {0, 0};
  SamplingParams p;
  p.repetition_penalty = 1.2f;  // 2 / 1.2 < 1.9
  EXPECT_EQ(Sampler(p, -1).sample(logits, history), 1);
  p = {};
  p.frequency_penalty = 0.06f;  // 2 - 2 * 0.06 < 1.9
  EXPECT_EQ(Sampler(p, -1).sample(logits, history), 1);
  p.frequency_penalty = 0.04f;
  EXPECT_EQ(Sampler(p, -1).sample(logits, history), 0);
  p = {};
  p.presence_penalty = 0.2f;
  EXPECT_EQ(Sampler(p, -1).sample(logits, history), 1);
}

// The distribution by its definition: every id sorted most likely first (equal logits by id),
// weights over the top-k set, the top-p prefix, the min-p cut. The sampler must give the same ids
// and weights without sorting the vocabulary.
Candidates sorted_reference(const std::vector<float>& l, const SamplingParams& p) {
  std::vector<int32_t> ids(l.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return l[size_t(a)] > l[size_t(b)] || (l[size_t(a)] == l[size_t(b)] && a < b);
  });
  if (p.top_k > 0 && size_t(p.top_k) < ids.size()) ids.resize(size_t(p.top_k));
  const double top = l[size_t(ids[0])];
  std::vector<double> probs;
  double total = 0;
  for (int32_t id : ids)
    total += probs.emplace_back(std::exp((l[size_t(id)] - top) / p.temperature));
  for (double& x : probs) x /= total;
  size_t cut = ids.size();
  double mass = 0;
  for (size_t i = 0; i < ids.size() && p.top_p < 1.f; ++i)
    if ((mass += probs[i]) >= p.top_p) {
      cut = i + 1;
      break;
    }
  while (cut > 1 && probs[cut - 1] < p.min_p * probs[0]) --cut;
  Candidates c;
  c.ids.assign(ids.begin(), ids.begin() + ptrdiff_t(cut));
  c.weights.assign(probs.begin(), probs.begin() + ptrdiff_t(cut));
  c.mass = std::accumulate(c.weights.begin(), c.weights.end(), 0.0);
  return c;
}

TEST(SamplerTest, CandidatesAreTheSortedDefinitionsWithoutTheSort) {
  std::mt19937_64 rng(11);
  const int vocab = 50000;
  for (int trial = 0; trial < 24; ++trial) {
    // Trained-model-like rows (a few ids carry most of the mass), flat ones (a random model's:
    // the nucleus is most of the vocabulary), and rows with many equal logits.
    std::normal_distribution<float> normal(0.f, trial % 3 == 0   ? 2.5f
                                                : trial % 3 == 1 ? 0.3f
                                                                 : 1.f);
    std::vector<float> l(vocab);
    for (float& v : l) v = normal(rng);
    if (trial % 3 == 0)
      for (float boost : {14.f, 12.f, 11.f, 9.f}) l[rng() % vocab] += boost;
    if (trial % 3 == 2)
      for (float& v : l) v = std::round(v * 4.f) / 4.f;
    for (float temperature : {0.6f, 1.f, 1.5f}) {
      for (auto [top_k, top_p, min_p] : {std::tuple{0, 1.f, 0.f},
                                         {0, 0.95f, 0.f},
                                         {0, 0.5f, 0.f},
                                         {0, 1.f, 0.05f},
                                         {0, 0.9f, 0.1f},
                                         {20, 0.8f, 0.f},
                                         {200, 1.f, 0.02f},
                                         {0, 0.999999f, 0.f}}) {
        SamplingParams p;
        p.temperature = temperature;
        p.top_k = top_k;
        p.top_p = top_p;
        p.min_p = min_p;
        const Candidates want = sorted_reference(l, p);
        const Candidates got = Sampler(p, -1).candidates(l, {});
        std::map<int32_t, double> got_weight;
        for (size_t i = 0; i < got.ids.size(); ++i) got_weight[got.ids[i]] = got.weights[i];
        ASSERT_EQ(got.ids.size(), want.ids.size())
            << "trial " << trial << " T " << temperature << " top_k " << top_k << " top_p " << top_p
            << " min_p " << min_p;
        for (size_t i = 0; i < want.ids.size(); ++i) {
          ASSERT_TRUE(got_weight.count(want.ids[i])) << want.ids[i];
          ASSERT_NEAR(got_weight[want.ids[i]], want.weights[i], 1e-5 * want.weights[i]);
        }
        EXPECT_NEAR(got.mass, want.mass, 1e-6);
      }
    }
  }
}

TEST(SamplerTest, PenaltiesSeeTheWholeHistoryOncePerId) {
  // A long history of few distinct ids: each is penalised once, by its count.
  std::vector<float> logits = {5.f, 4.f, -1.f, 3.f};
  std::vector<int32_t> history;
  for (int i = 0; i < 1000; ++i) history.push_back(i % 3 == 0 ? 2 : 0);
  history.push_back(-4);  // out of range: ignored
  history.push_back(9);
  SamplingParams p;
  p.repetition_penalty = 2.f;
  p.frequency_penalty = 0.001f;
  Sampler sampler(p, -1);
  // id 0: 5 / 2 - 0.001 * 666 = 1.834; id 2: -1 * 2 - 0.001 * 334; id 1 (4) and 3 (3) untouched.
  EXPECT_EQ(sampler.sample(logits, history), 1);
  p.repetition_penalty = 1.f;
  p.frequency_penalty = 0.0016f;  // id 0: 5 - 1.0656 = 3.93 < 4
  EXPECT_EQ(Sampler(p, -1).sample(logits, history), 1);
  p.frequency_penalty = 0.0014f;  // id 0: 5 - 0.93 = 4.07 > 4
  EXPECT_EQ(Sampler(p, -1).sample(logits, history), 0);
}

TEST(SamplerTest, TemperatureAloneDrawsAsItsCandidatesDo) {
  // sample() draws without building the candidates when every id is one; it must pick exactly
  // what draw(candidates()) picks from the same random state.
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0.f, 2.f);
  std::vector<float> logits(30011);
  for (float& v : logits) v = normal(rng);
  for (float temperature : {0.5f, 1.f, 2.f}) {
    SamplingParams p;
    p.temperature = temperature;
    p.seed = 99;
    p.top_k = temperature == 2.f ? 40000 : 0;  // a top-k over the vocabulary cuts nothing
    Sampler fast(p, 30000), built(p, 30000);
    for (int i = 0; i < 300; ++i) {
      const int32_t a = fast.sample(logits);
      ASSERT_EQ(a, built.draw(built.candidates(logits, {}))) << i;
      ASSERT_LE(a, 30000);
    }
  }
}

TEST(SamplerTest, TopLogprobsAreSortedNormalisedLogProbabilities) {
  std::vector<float> logits = {0.f, 3.f, 1.f, 5.f};
  auto top = top_logprobs(logits, 2, 2);  // id 3 excluded
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].id, 1);
  EXPECT_EQ(top[1].id, 2);
  double z = std::log(std::exp(0.0) + std::exp(3.0) + std::exp(1.0));
  EXPECT_NEAR(top[0].logprob, 3.0 - z, 1e-6);
  EXPECT_NEAR(top[1].logprob, 1.0 - z, 1e-6);
  EXPECT_NEAR(token_logprob(logits, 0, 2), 0.0 - z, 1e-6);
}

}  // namespace
}  // namespace qmlx
