// Sampler: picks the next token from a logits row. Temperature 0 is greedy (argmax); otherwise
// penalties, temperature, top-k, top-p and min-p filter the distribution and a seeded
// std::mt19937_64 draws from it, so a seed reproduces a run. Ids above max_token_id (the padding
// rows of an embedding larger than the tokenizer's vocabulary) are never chosen.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace qmlx {

struct SamplingParams {
  float temperature = 0.f;
  int top_k = 0;                   // 0: off
  float top_p = 1.f;               // 1: off
  float min_p = 0.f;               // 0: off
  float repetition_penalty = 1.f;  // 1: off; positive logits divided, negative multiplied
  float presence_penalty = 0.f;    // subtracted once from every id in the history
  float frequency_penalty = 0.f;   // subtracted per occurrence in the history
  uint64_t seed = 0;
};

// The distribution sample() draws from: candidate ids with weights that sum to `mass` (the
// weights are normalised over the top-k set; top-p and min-p then cut the tail, top-p at the
// smallest most-likely-first prefix, equal logits ordered by id). With top-k the ids come most
// likely first; without it they come in id order, as finding them sorts nothing (sorting a 248k
// vocabulary cost 38 ms a token). Greedy: the argmax alone, weight 1.
struct Candidates {
  std::vector<int32_t> ids;
  std::vector<double> weights;
  double mass = 1;
  // The probability of `id` (0 when it is not a candidate).
  double probability(int32_t id) const;
};

class Sampler {
 public:
  // max_token_id < 0 means every row of the logits may be chosen.
  Sampler(const SamplingParams& params, int32_t max_token_id);

  // history: the ids the penalties look at (the caller decides: generated, or whole context).
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history = {});

  // The pieces of sample(), for speculative decoding (engine/speculative.h), which needs the
  // distributions themselves: sample(l, h) is draw(candidates(l, h)).
  Candidates candidates(std::span<const float> logits, std::span<const int32_t> history) const;
  int32_t draw(const Candidates& c);
  // A uniform draw in [0, 1) from the same random state.
  double uniform();
  bool greedy() const { return params_.temperature <= 0.f; }

  const SamplingParams& params() const { return params_; }

 private:
  SamplingParams params_;
  int32_t max_token_id_;
  std::mt19937_64 rng_;
  std::vector<float> weights_;  // sample()'s per-id weights, kept between tokens
};

struct TokenLogprob {
  int32_t id;
  float logprob;
};

// The k most likely ids (ids <= max_token_id) with their log-probabilities under the unmodified
// distribution, most likely first.
std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, int k,
                                       int32_t max_token_id = -1);
// log-probability of `id` under the unmodified distribution.
float token_logprob(std::span<const float> logits, int32_t id, int32_t max_token_id = -1);

}  // namespace qmlx
