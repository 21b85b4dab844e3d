#include "server/scheduling/draft_constraint.h"

#include <algorithm>
#include <stdexcept>

namespace qmlx::server {

std::span<const float> DraftConstraint::allowed(std::span<const float> logits) {
  return tool_calls_.mask(reply_.mask(logits));
}

bool DraftConstraint::free() const {
  return !ended_ && !reply_.forces(generated_ + int(marks_.size()));
}

void DraftConstraint::push(int32_t token) {
  marks_.push_back({reply_.mark(), tool_calls_.mark()});
  reply_.observe(token);
  tool_calls_.observe(token);
  ended_ =
      std::find(stop_token_ids_.begin(), stop_token_ids_.end(), token) != stop_token_ids_.end();
}

void DraftConstraint::pop(int n) {
  if (n < 0 || size_t(n) > marks_.size())
    throw std::logic_error("DraftConstraint: pop(" + std::to_string(n) + ") after " +
                           std::to_string(marks_.size()) + " pushes");
  if (n == 0) return;
  const Mark& back_to = marks_[marks_.size() - size_t(n)];
  reply_.restore(back_to.reply);
  tool_calls_.restore(back_to.tool_calls);
  marks_.resize(marks_.size() - size_t(n));
  ended_ = false;  // only a stop token sets it, and nothing is pushed after one
}

}  // namespace qmlx::server
