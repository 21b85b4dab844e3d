// TagWatcher: watches a reply's tokens for a tag (`</think>`, `<tool_call>`) by text rather
// than by id: it may be one token or several ordinary ones, and a token may carry bytes past
// it. Used by the decode loop's constraints, which start or end their work at such tags.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "text/tokenizer/tokenizer.h"

namespace qmlx::server {

class TagWatcher {
 public:
  TagWatcher(const Tokenizer& tokenizer, std::string_view tag) : tokenizer_(tokenizer), tag_(tag) {}

  // True once `token` completes the tag (then it starts over for a later one); after_tag() then
  // holds the token's bytes that followed it.
  bool seen_after(int32_t token) { return seen_after_bytes(tokenizer_.token_bytes(token)); }
  // The same for the reply's next bytes, whatever tokens carried them.
  bool seen_after_bytes(std::string_view bytes) {
    tail_ += bytes;
    if (size_t at = tail_.find(tag_); at != std::string::npos) {
      after_tag_ = tail_.substr(at + tag_.size());
      tail_.clear();
      return true;
    }
    // Only the tag's length can hold a tag still forming across tokens.
    if (tail_.size() > tag_.size()) tail_.erase(0, tail_.size() - tag_.size());
    return false;
  }
  const std::string& after_tag() const { return after_tag_; }

  // What it has seen, to return to (speculative drafts are taken tentatively).
  struct Mark {
    std::string tail, after_tag;
  };
  Mark mark() const { return {tail_, after_tag_}; }
  void restore(const Mark& m) {
    tail_ = m.tail;
    after_tag_ = m.after_tag;
  }

 private:
  const Tokenizer& tokenizer_;
  std::string tag_;
  std::string tail_;  // the reply's last bytes
  std::string after_tag_;
};

}  // namespace qmlx::server
