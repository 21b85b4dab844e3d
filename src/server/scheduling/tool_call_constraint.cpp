#include "server/scheduling/tool_call_constraint.h"

#include <algorithm>
#include <limits>

#include "kernels/vec.h"
#include "server/scheduling/tool_call_grammar.h"
#include "text/output/output_format.h"

namespace qmlx::server {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr float kRefused = -std::numeric_limits<float>::infinity();

}  // namespace

ToolCallConstraint::ToolCallConstraint(std::shared_ptr<const grammar::TokenMaskTables> tables,
                                       const GenerationRequest& request,
                                       std::string_view rendered_prompt, const Tokenizer& tokenizer,
                                       std::vector<int32_t> stop_token_ids)
    : tables_(std::move(tables)),
      stop_token_ids_(std::move(stop_token_ids)),
      reasoning_end_(tokenizer),
      call_open_(tokenizer, kToolCallOpenTag),
      call_close_(tokenizer, kToolCallCloseTag),
      tokenizer_(tokenizer) {
  const bool calls_parsed = !request.tools.empty() &&
                            request.tool_choice != ToolChoiceMode::kNone &&
                            request.route != Route::kCompletions;
  if (!calls_parsed || (!tables_ && request.parallel_tool_calls)) return;
  // As the output parser reads a reply: reasoning first when the prompt opened it, else when
  // the reply opens `<think>` itself.
  phase_ = prompt_ends_inside_think(rendered_prompt) ? Phase::kReasoning : Phase::kStart;
}

void ToolCallConstraint::open_call() {
  if (!tables_) {
    phase_ = Phase::kFreeCall;
    return;
  }
  matcher_ = std::make_unique<grammar::GrammarMatcher>(tables_);
  phase_ = Phase::kCall;
  const std::string& rest = call_open_.after_tag();
  accepted_ = 1;
  if (matcher_->accept_bytes(std::string(kToolCallOpenTag) + rest)) return;
  ++refused_;  // the token ran on past the tag with bytes the grammar does not allow there
  if (!matcher_->accept_bytes(kToolCallOpenTag)) accepted_ = 0;
}

ToolCallConstraint::Mark ToolCallConstraint::mark() const {
  return {phase_,
          start_,
          reasoning_end_.mark(),
          call_open_.mark(),
          call_close_.mark(),
          bool(matcher_),
          refused_,
          accepted_};
}

void ToolCallConstraint::restore(const Mark& m) {
  phase_ = m.phase;
  start_ = m.start;
  reasoning_end_.restore(m.reasoning_end);
  call_open_.restore(m.call_open);
  call_close_.restore(m.call_close);
  refused_ = m.refused;
  if (!m.call_opened) {
    matcher_.reset();  // the call opened after the mark: its matcher goes with it
  } else if (accepted_ > m.accepted) {
    matcher_->rollback(accepted_ - m.accepted);
  }
  accepted_ = m.call_opened ? m.accepted : 0;
}

std::span<const float> ToolCallConstraint::mask(std::span<const float> logits) {
  if (phase_ != Phase::kCall && phase_ != Phase::kEnd) return logits;
  if (phase_ == Phase::kEnd) {
    masked_.assign(logits.size(), kRefused);
    for (int32_t id : stop_token_ids_) {
      if (id >= 0 && size_t(id) < logits.size()) masked_[size_t(id)] = logits[size_t(id)];
    }
    return masked_;
  }
  // Both buffers keep their size from step to step: no allocation per token.
  masked_.resize(logits.size());
  bits_.resize(std::max(matcher_->mask_words(), (masked_.size() + 63) / 64));
  matcher_->fill_next_token_bitmask(bits_);
  vec::select_by_bits(masked_.data(), logits.data(), bits_.data(), kRefused, masked_.size());
  return masked_;
}

void ToolCallConstraint::observe(int32_t token) {
  switch (phase_) {
    case Phase::kOff:
    case Phase::kEnd:
      return;
    case Phase::kReasoning:
      if (reasoning_end_.seen_after(token)) phase_ = Phase::kFree;
      return;
    case Phase::kStart: {
      start_ += tokenizer_.token_bytes(token);
      const size_t first = start_.find_first_not_of(" \t\r\n");
      const std::string_view rest =
          first == std::string::npos ? std::string_view() : std::string_view(start_).substr(first);
      if (rest.starts_with(kThinkOpen)) {
        phase_ = Phase::kReasoning;
        // The same token may already close it: read what follows the tag.
        if (reasoning_end_.seen_after_bytes(rest.substr(kThinkOpen.size()))) phase_ = Phase::kFree;
        return;
      }
      if (!rest.empty() && kThinkOpen.starts_with(rest)) return;
      phase_ = Phase::kFree;
      // The bytes held while deciding may begin the call's tag.
      if (call_open_.seen_after_bytes(start_)) open_call();
      return;
    }
    case Phase::kFree:
      if (call_open_.seen_after(token)) open_call();
      return;
    case Phase::kCall:
      if (matcher_->accept_token(token))
        ++accepted_;
      else
        ++refused_;
      return;
    case Phase::kFreeCall:
      if (call_close_.seen_after(token)) phase_ = Phase::kEnd;
      return;
  }
}

}  // namespace qmlx::server
