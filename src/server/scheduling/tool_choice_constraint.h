// ToolChoiceConstraint: makes the reply call a tool when the request says it must
// (`tool_choice: "required"`, or a named function; Anthropic's "any" and "tool" alike).
//
// It works by forcing tokens in the decode loop: once the reasoning block is closed (at once
// when the prompt does not open `<think>`), the next tokens are the tool call's opening instead
// of sampled ones: `<tool_call>`, and for a named function also the text that names it, in the
// model's tool-call format. The model then writes the call's arguments itself. With any other
// tool_choice it never forces anything.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/generation_request.h"
#include "server/scheduling/reasoning_end.h"
#include "text/output/output_format.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx::server {

// The text forced for `request`'s tool_choice in `format`, or "" when nothing is forced.
// JSON: `<tool_call>` then, for a named function, `\n{"name": "NAME", "arguments":`.
// XML: `<tool_call>` then, for a named function, `\n<function=NAME>\n`.
std::string forced_tool_call_opening(const GenerationRequest& request, ToolCallFormat format);

class ToolChoiceConstraint {
 public:
  ToolChoiceConstraint(const GenerationRequest& request, std::string_view rendered_prompt,
                       ToolCallFormat format, const Tokenizer& tokenizer);

  // The token to emit next instead of sampling one, while the opening is being forced.
  std::optional<int32_t> forced_token();
  // Every token of the reply, forced or sampled, in order (to see the reasoning block close).
  void observe(int32_t token);
  // Whether forced_token() may still return a token.
  bool may_force() const {
    return phase_ == Phase::kAwaitReasoningEnd || phase_ == Phase::kForcing;
  }

 private:
  enum class Phase { kOff, kAwaitReasoningEnd, kForcing, kDone };

  ReasoningEnd reasoning_end_;
  Phase phase_ = Phase::kOff;
  std::deque<int32_t> forced_;
};

}  // namespace qmlx::server
