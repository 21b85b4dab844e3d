#include "grammar/byte_trie.h"

#include <algorithm>

namespace qmlx::grammar {

ByteTrie::ByteTrie(std::vector<std::pair<std::string, int32_t>> items) {
  std::sort(items.begin(), items.end());
  std::vector<uint32_t> open;  // node index at each depth on the current path
  const std::string* previous = nullptr;
  for (const auto& [s, value] : items) {
    if (s.empty()) continue;
    size_t common = 0;
    if (previous)
      while (common < previous->size() && common < s.size() && (*previous)[common] == s[common])
        ++common;
    // Close the nodes of the previous path below the common prefix.
    while (open.size() > common) {
      subtree_end_[open.back()] = static_cast<uint32_t>(bytes_.size());
      open.pop_back();
    }
    for (size_t d = common; d < s.size(); ++d) {
      open.push_back(static_cast<uint32_t>(bytes_.size()));
      bytes_.push_back(static_cast<uint8_t>(s[d]));
      depth_.push_back(static_cast<uint32_t>(d + 1));
      subtree_end_.push_back(0);
      value_begin_.push_back(static_cast<uint32_t>(values_.size()));
    }
    values_.push_back(value);  // belongs to the last node (its begin was set when created)
    max_depth_ = std::max(max_depth_, static_cast<uint32_t>(s.size()));
    previous = &s;
  }
  while (!open.empty()) {
    subtree_end_[open.back()] = static_cast<uint32_t>(bytes_.size());
    open.pop_back();
  }
  value_begin_.push_back(static_cast<uint32_t>(values_.size()));
}

}  // namespace qmlx::grammar
