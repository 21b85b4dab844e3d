// DraftConstraint: a reply's constraints in the decode loop (its format, ReplyConstraint; its
// tool calls, ToolCallConstraint) as speculative decoding asks them (engine/token_constraint.h):
// the head's drafts are drawn from the masked distribution and checked against the main model's
// masked one, each draft observed tentatively and undone after the step, so a constrained reply
// speculates and stays exactly what plain constrained decoding gives. Where the reply forces a
// token (a reasoning closed in time) or the turn has ended, drafting stops.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/token_constraint.h"
#include "server/scheduling/reply_constraint.h"
#include "server/scheduling/tool_call_constraint.h"

namespace qmlx::server {

class DraftConstraint : public TokenConstraint {
 public:
  DraftConstraint(ReplyConstraint& reply, ToolCallConstraint& tool_calls,
                  std::vector<int32_t> stop_token_ids)
      : reply_(reply), tool_calls_(tool_calls), stop_token_ids_(std::move(stop_token_ids)) {}

  // Whether either constraint may ever mask or force (else the step needs none).
  bool enabled() const { return reply_.enabled() || tool_calls_.enabled(); }
  // The step about to run chooses the reply's token number `generated` first.
  void start(int generated) {
    generated_ = generated;
    marks_.clear();
  }

  std::span<const float> allowed(std::span<const float> logits) override;
  bool free() const override;
  void push(int32_t token) override;
  void pop(int n) override;

 private:
  struct Mark {
    ReplyConstraint::Mark reply;
    ToolCallConstraint::Mark tool_calls;
  };

  ReplyConstraint& reply_;
  ToolCallConstraint& tool_calls_;
  std::vector<int32_t> stop_token_ids_;
  int generated_ = 0;
  bool ended_ = false;       // a stop token was pushed: nothing follows it
  std::vector<Mark> marks_;  // one per push not yet popped
};

}  // namespace qmlx::server
