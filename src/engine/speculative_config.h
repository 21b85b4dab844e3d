// The speculative decoding setting as `serve` and `generate` take it: `--speculative mtp[:k]`
// (qmlx's own) or qMLX's / vLLM's `--speculative-config '{"method":"mtp",
// "num_speculative_tokens":k}'`. Both give the number of draft tokens per step, 0 for off.
#pragma once

#include <string>

namespace qmlx {

// "mtp" (1 draft token), "mtp:K" (K in 1..kMaxDraftTokens) or "off"; throws qmlx::Error saying
// what is accepted.
int parse_speculative_flag(const std::string& value);
// The JSON object: "method" must be "mtp", "num_speculative_tokens" 1..kMaxDraftTokens (1 when
// absent); any other key is an error naming it.
int parse_speculative_config(const std::string& json);

// Measurement hook: QMLX_SPECULATIVE_REJECT=p makes the decoder reject each draft it would accept
// with probability p (SpeculativeOptions::reject_probability), to draw speed against acceptance;
// 0 when unset. Throws qmlx::Error on a value outside [0, 1].
double speculative_reject_probability_from_env();

}  // namespace qmlx
