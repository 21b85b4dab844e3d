// What a speculative decoding step hands its caller (engine/speculative.h), in a header of its
// own so the server's session interface can name it without the engine's model headers.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace qmlx {

constexpr int kMaxDraftTokens = 4;

// What one step produced: the tokens that follow the step's input token, each with the logits
// row it was chosen from (the main model's, as plain decoding would have them).
struct SpeculativeStep {
  std::vector<int32_t> tokens;
  std::vector<std::span<const float>> logits;
  int drafted = 0;   // drafts the head proposed
  int accepted = 0;  // of which the main model kept
};

// Totals over a decoder's steps (metrics, the request's log line).
struct SpeculativeCounts {
  int64_t steps = 0, drafted = 0, accepted = 0, tokens = 0;
};

}  // namespace qmlx
