// StopMatcher: finds the request's stop strings in streamed text. Text that could still be
// the beginning of a stop string is held back, so a client never receives part of a stop
// sequence; the stop string itself is never emitted.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qmlx::server {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Adds text; returns what is now safe to emit. After a match, returns the text before it
  // and matched() tells which stop string ended the output; further pushes return "".
  std::string push(std::string_view text);
  // The end of output: releases whatever was held back.
  std::string finish();
  const std::optional<std::string>& matched() const { return matched_; }

 private:
  // Length of the longest suffix of held_ that is a proper prefix of some stop string.
  size_t partial_match_length() const;

  std::vector<std::string> stops_;
  std::string held_;
  std::optional<std::string> matched_;
};

}  // namespace qmlx::server
