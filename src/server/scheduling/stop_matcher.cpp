#include "server/scheduling/stop_matcher.h"

#include <algorithm>

namespace qmlx::server {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

std::string StopMatcher::push(std::string_view text) {
  if (matched_) return "";
  held_.append(text);
  size_t first = std::string::npos;
  for (const auto& stop : stops_) {
    size_t at = held_.find(stop);
    if (at != std::string::npos && (first == std::string::npos || at < first)) {
      first = at;
      matched_ = stop;
    }
  }
  if (first != std::string::npos) {
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  size_t keep = partial_match_length();
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::finish() {
  std::string out;
  out.swap(held_);
  return out;
}

size_t StopMatcher::partial_match_length() const {
  size_t best = 0;
  for (const auto& stop : stops_) {
    size_t longest = std::min(stop.size() - 1, held_.size());
    for (size_t len = longest; len > best; --len) {
      if (std::string_view(held_).substr(held_.size() - len) ==
          std::string_view(stop).substr(0, len)) {
        best = len;
        break;
      }
    }
  }
  return best;
}

}  // namespace qmlx::server
