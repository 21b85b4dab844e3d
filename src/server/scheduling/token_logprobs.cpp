#include "server/scheduling/token_logprobs.h"

#include "engine/sampler.h"

namespace qmlx::server {

TokenLogprob compute_token_logprob(std::span<const float> logits, int32_t chosen, int top_n,
                                   int32_t max_token_id) {
  TokenLogprob out;
  out.id = chosen;
  out.logprob = qmlx::token_logprob(logits, chosen, max_token_id);
  if (top_n > 0) {
    for (const auto& alt : qmlx::top_logprobs(logits, top_n, max_token_id)) {
      out.top.emplace_back(alt.id, alt.logprob);
    }
  }
  return out;
}

}  // namespace qmlx::server
