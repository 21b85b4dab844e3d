// ReplyConstraint: holds one reply to its grammar in the decode loop (reply_grammars.h bound
// it when the request arrived). Before each sampled token it masks the logits of every token
// the grammar does not allow (to -inf: the sampler gives them weight exactly 0), and it
// advances on every token taken. Stop tokens are allowed exactly when the value is complete, so
// the turn ends there.
//
// With reasoning on (the prompt ends inside `<think>`), the reasoning is free and the grammar
// starts after `</think>` and the blank line the templates put after it; the reasoning may not
// end the turn (stop tokens are masked), since the reply would then hold no value at all. A
// reasoning that would leave fewer than a quarter of max_tokens (at most 1,024) for the reply is
// closed in time:
// `</think>\n\n` is forced then, so the JSON has room to follow.
//
// With tools offered, the reply is either a tool call or the format's value: the first token
// of the reply may also be the token that opens a tool call, and if it is taken the call is
// free (the tool-call parser reads it as without a format).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar_matcher.h"
#include "server/scheduling/reasoning_end.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx::server {

class ReplyConstraint {
  enum class Phase { kReasoning, kForcing, kGrammar, kToolCall };

 public:
  // `tables` null: no constraint (every call is a no-op).
  // `tool_call_open`: the token that opens a tool call, when the request offers tools.
  ReplyConstraint(std::shared_ptr<const grammar::TokenMaskTables> tables,
                  std::string_view rendered_prompt, int max_tokens, const Tokenizer& tokenizer,
                  std::optional<int32_t> tool_call_open = std::nullopt);

  bool enabled() const { return matcher_ != nullptr; }
  // A token to take instead of sampling (closing a reasoning that runs too long, the blank line
  // after it), given how many tokens the reply has so far.
  std::optional<int32_t> forced_token(int generated);
  // The logits to sample from: `logits` itself while the reply is free, else a copy with every
  // disallowed token at -inf.
  std::span<const float> mask(std::span<const float> logits);
  // Every token of the reply, forced or sampled, in order.
  void observe(int32_t token);
  // Tokens the grammar refused (only a forced token can be one; counted, never silent).
  int64_t refused() const { return refused_; }
  // Whether forced_token(generated) would give a token (and not change anything to say so).
  bool forces(int generated) const;

  // Where the reply stands, to come back to after tokens observed tentatively (speculative
  // drafts): restore(mark()) undoes every observe() since, however many.
  struct Mark {
    Phase phase = Phase::kGrammar;
    bool at_reply_start = true;
    std::deque<int32_t> forced;
    TagWatcher::Mark reasoning_end;
    int64_t refused = 0;
    size_t accepted = 0;
  };
  Mark mark() const;
  void restore(const Mark& m);

 private:
  void start_forcing(std::string_view text);

  const Tokenizer& tokenizer_;
  std::shared_ptr<const grammar::TokenMaskTables> tables_;
  ReasoningEnd reasoning_end_;
  std::unique_ptr<grammar::GrammarMatcher> matcher_;
  Phase phase_ = Phase::kGrammar;
  int close_reasoning_at_ = 0;  // generated tokens after which reasoning is closed
  std::optional<int32_t> tool_call_open_;
  bool at_reply_start_ = true;  // no token of the grammar's part taken yet
  std::deque<int32_t> forced_;
  std::vector<uint64_t> bits_;
  std::vector<float> masked_;
  int64_t refused_ = 0;
  size_t accepted_ = 0;  // tokens the matcher took (what rollback() counts)
};

}  // namespace qmlx::server
