#include "server/scheduling/reply_constraint.h"

#include <algorithm>
#include <limits>

#include "kernels/vec.h"
#include "text/output/output_format.h"

namespace qmlx::server {
namespace {

// What the templates put between the reasoning and the reply.
constexpr std::string_view kAfterReasoning = "\n\n";
// The reply's share of max_tokens kept free of reasoning, and its cap.
constexpr int kReplyShareDivisor = 4;
constexpr int kMaxReplyReserve = 1024;

}  // namespace

ReplyConstraint::ReplyConstraint(std::shared_ptr<const grammar::TokenMaskTables> tables,
                                 std::string_view rendered_prompt, int max_tokens,
                                 const Tokenizer& tokenizer, std::optional<int32_t> tool_call_open)
    : tokenizer_(tokenizer),
      tables_(std::move(tables)),
      reasoning_end_(tokenizer),
      tool_call_open_(tool_call_open) {
  if (!tables_) return;
  matcher_ = std::make_unique<grammar::GrammarMatcher>(tables_);
  if (prompt_ends_inside_think(rendered_prompt)) {
    phase_ = Phase::kReasoning;
    const int reserve = std::min(kMaxReplyReserve, std::max(1, max_tokens / kReplyShareDivisor));
    close_reasoning_at_ = std::max(0, max_tokens - reserve);
  }
}

void ReplyConstraint::start_forcing(std::string_view text) {
  const std::vector<int32_t> ids = tokenizer_.encode(text, true);
  forced_.insert(forced_.end(), ids.begin(), ids.end());
  phase_ = forced_.empty() ? Phase::kGrammar : Phase::kForcing;
}

std::optional<int32_t> ReplyConstraint::forced_token(int generated) {
  if (!matcher_) return std::nullopt;
  if (phase_ == Phase::kReasoning && generated >= close_reasoning_at_) {
    // Closed in time: the reply needs its reserve. The text already written may end inside a
    // partial `</think>`; the whole tag is forced anyway (the parser reads the first one).
    start_forcing(std::string(kReasoningEndTag) + std::string(kAfterReasoning));
  }
  if (phase_ != Phase::kForcing) return std::nullopt;
  const int32_t token = forced_.front();
  forced_.pop_front();
  return token;
}

bool ReplyConstraint::forces(int generated) const {
  return matcher_ && (phase_ == Phase::kForcing ||
                      (phase_ == Phase::kReasoning && generated >= close_reasoning_at_));
}

ReplyConstraint::Mark ReplyConstraint::mark() const {
  return {phase_, at_reply_start_, forced_, reasoning_end_.mark(), refused_, accepted_};
}

void ReplyConstraint::restore(const Mark& m) {
  phase_ = m.phase;
  at_reply_start_ = m.at_reply_start;
  forced_ = m.forced;
  reasoning_end_.restore(m.reasoning_end);
  refused_ = m.refused;
  if (matcher_ && accepted_ > m.accepted) matcher_->rollback(accepted_ - m.accepted);
  accepted_ = m.accepted;
}

std::span<const float> ReplyConstraint::mask(std::span<const float> logits) {
  if (!matcher_ || phase_ == Phase::kForcing || phase_ == Phase::kToolCall) return logits;
  constexpr float kRefused = -std::numeric_limits<float>::infinity();
  if (phase_ == Phase::kReasoning) {
    masked_.assign(logits.begin(), logits.end());
    for (int32_t id : tables_->vocab().stop_token_ids()) {
      if (id >= 0 && size_t(id) < masked_.size()) masked_[size_t(id)] = kRefused;
    }
    return masked_;
  }
  // Both buffers keep their size from step to step: no allocation per token.
  masked_.resize(logits.size());
  bits_.resize(std::max(matcher_->mask_words(), (masked_.size() + 63) / 64));
  matcher_->fill_next_token_bitmask(bits_);
  if (at_reply_start_ && tool_call_open_ && size_t(*tool_call_open_) < masked_.size()) {
    const size_t id = size_t(*tool_call_open_);
    bits_[id >> 6] |= uint64_t(1) << (id & 63);
  }
  vec::select_by_bits(masked_.data(), logits.data(), bits_.data(), kRefused, masked_.size());
  return masked_;
}

void ReplyConstraint::observe(int32_t token) {
  if (!matcher_) return;
  switch (phase_) {
    case Phase::kReasoning:
      if (reasoning_end_.seen_after(token)) start_forcing(kAfterReasoning);
      return;
    case Phase::kForcing:
      if (forced_.empty()) phase_ = Phase::kGrammar;
      return;
    case Phase::kGrammar:
      if (at_reply_start_ && tool_call_open_ && token == *tool_call_open_) {
        phase_ = Phase::kToolCall;  // a tool call instead of the value: free from here
        return;
      }
      at_reply_start_ = false;
      if (matcher_->accept_token(token))
        ++accepted_;
      else
        ++refused_;
      return;
    case Phase::kToolCall:
      return;
  }
}

}  // namespace qmlx::server
