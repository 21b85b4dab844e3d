// ReasoningEnd: watches a reply's tokens for the end of its reasoning block, `</think>`, by text
// rather than by id (it may be one special token or several ordinary ones). Used by the decode
// loop's constraints, which start their work where the reasoning ends.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "text/tokenizer/tokenizer.h"

namespace qmlx::server {

inline constexpr std::string_view kReasoningEndTag = "</think>";

class ReasoningEnd {
 public:
  explicit ReasoningEnd(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  // True once `token` completes `</think>` (then it starts over for any later block).
  bool seen_after(int32_t token) {
    tail_ += tokenizer_.token_bytes(token);
    if (tail_.find(kReasoningEndTag) != std::string::npos) {
      tail_.clear();
      return true;
    }
    // Only the tag's length can hold a tag still forming across tokens.
    if (tail_.size() > kReasoningEndTag.size()) {
      tail_.erase(0, tail_.size() - kReasoningEndTag.size());
    }
    return false;
  }

 private:
  const Tokenizer& tokenizer_;
  std::string tail_;  // the reply's last bytes
};

}  // namespace qmlx::server
