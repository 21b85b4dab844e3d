// ToolCallConstraint: holds a reply's tool calls to the request's tool-call grammar
// (tool_call_grammar.h, bound when the request arrived) in the decode loop. The text before the
// first call is free (reasoning included); where the reply opens a call (`<tool_call>`, one
// token or several) a matcher starts, fed that tag, and from there every token is masked to the
// grammar: the call, the calls after it where parallel calls are allowed, then only the end of
// the turn. Forced tokens (tool_choice's opening, ToolChoiceConstraint) go through the matcher
// like sampled ones.
//
// Without a grammar, parallel_tool_calls false still ends the turn after the first call: once
// `</tool_call>` is written only the stop tokens are allowed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar_matcher.h"
#include "server/common/generation_request.h"
#include "server/scheduling/reasoning_end.h"
#include "server/scheduling/tag_watcher.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx::server {

class ToolCallConstraint {
  enum class Phase { kOff, kStart, kReasoning, kFree, kCall, kFreeCall, kEnd };

 public:
  // `tables` null: no grammar. `stop_token_ids`: the tokens that end the turn.
  ToolCallConstraint(std::shared_ptr<const grammar::TokenMaskTables> tables,
                     const GenerationRequest& request, std::string_view rendered_prompt,
                     const Tokenizer& tokenizer, std::vector<int32_t> stop_token_ids);

  // Whether it may ever mask.
  bool enabled() const { return phase_ != Phase::kOff; }
  // `logits` itself while the reply is free, else a copy with every disallowed token at -inf.
  std::span<const float> mask(std::span<const float> logits);
  // Every token of the reply, forced or sampled, in order.
  void observe(int32_t token);
  // Tokens the grammar refused (a forced token, or bytes a token carried past `<tool_call>`).
  int64_t refused() const { return refused_; }

  // Where the reply stands, to come back to after tokens observed tentatively (speculative
  // drafts): restore(mark()) undoes every observe() since, however many.
  struct Mark {
    Phase phase = Phase::kOff;
    std::string start;
    TagWatcher::Mark reasoning_end, call_open, call_close;
    bool call_opened = false;
    int64_t refused = 0;
    size_t accepted = 0;
  };
  Mark mark() const;
  void restore(const Mark& m);

 private:
  void open_call();

  std::shared_ptr<const grammar::TokenMaskTables> tables_;
  std::vector<int32_t> stop_token_ids_;
  ReasoningEnd reasoning_end_;
  TagWatcher call_open_;
  TagWatcher call_close_;
  const Tokenizer& tokenizer_;
  Phase phase_ = Phase::kOff;
  std::string start_;  // kStart: the reply's first bytes, until they show whether `<think>` opens
  std::unique_ptr<grammar::GrammarMatcher> matcher_;
  std::vector<uint64_t> bits_;
  std::vector<float> masked_;
  int64_t refused_ = 0;
  size_t accepted_ = 0;  // steps the matcher took (what rollback() counts)
};

}  // namespace qmlx::server
