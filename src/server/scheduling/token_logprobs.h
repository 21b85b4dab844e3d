// Log-probabilities of a sampled token and of the most likely alternatives, from the raw
// logits (before sampling filters), as OpenAI's `logprobs` reports them. The math is the
// engine's (engine/sampler.h); this only gathers it per generated token.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace qmlx::server {

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;  // most likely first
};

// max_token_id: the largest id the tokenizer knows (padding rows beyond it are never listed).
TokenLogprob compute_token_logprob(std::span<const float> logits, int32_t chosen, int top_n,
                                   int32_t max_token_id);

}  // namespace qmlx::server
