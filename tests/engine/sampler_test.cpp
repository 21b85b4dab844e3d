#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

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
