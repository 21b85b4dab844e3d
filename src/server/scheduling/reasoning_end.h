// ReasoningEnd: watches a reply's tokens for the end of its reasoning block, `</think>`, by text
// rather than by id (it may be one special token or several ordinary ones). Used by the decode
// loop's constraints, which start their work where the reasoning ends.
#pragma once

#include <string_view>

#include "server/scheduling/tag_watcher.h"

namespace qmlx::server {

inline constexpr std::string_view kReasoningEndTag = "</think>";

class ReasoningEnd : public TagWatcher {
 public:
  explicit ReasoningEnd(const Tokenizer& tokenizer) : TagWatcher(tokenizer, kReasoningEndTag) {}
};

}  // namespace qmlx::server
