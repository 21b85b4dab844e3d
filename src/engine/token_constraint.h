// TokenConstraint: what a constrained reply (a JSON schema, a tool-call grammar) lets the next
// token be, as speculative decoding (engine/speculative.h) asks it while it drafts and checks
// tokens ahead of the caller. The engine knows no grammar: the server implements this over its
// constraints. Tokens are pushed tentatively and popped again; the step leaves the constraint
// where it found it, and the caller then takes the step's tokens as it takes sampled ones.
#pragma once

#include <cstdint>
#include <span>

namespace qmlx {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // The row to choose the next token from: `logits` itself, or a copy with every token the
  // constraint refuses at -inf. Valid until the next call.
  virtual std::span<const float> allowed(std::span<const float> logits) = 0;
  // Whether the next token is chosen from allowed() at all: false where the caller forces it
  // (closing a reasoning that ran too long) or after the end of the turn.
  virtual bool free() const = 0;
  // Takes `token` as the next one, tentatively.
  virtual void push(int32_t token) = 0;
  // Undoes the last `n` pushes.
  virtual void pop(int n) = 0;
};

}  // namespace qmlx
