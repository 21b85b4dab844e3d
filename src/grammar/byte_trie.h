// ByteTrie: byte strings (token bytes, token remainders) laid out as a trie in depth-first
// order, so a walk visits every prefix once and skips a whole subtree in O(1) by jumping to
// subtree_end when the parser state dies on that prefix. Several values may share one string
// (two token ids with the same bytes).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qmlx::grammar {

class ByteTrie {
 public:
  ByteTrie() = default;
  // `items` need not be sorted; empty strings are ignored.
  explicit ByteTrie(std::vector<std::pair<std::string, int32_t>> items);

  size_t size() const { return bytes_.size(); }
  uint8_t byte(size_t n) const { return bytes_[n]; }
  uint32_t depth(size_t n) const { return depth_[n]; }  // 1 for a string's first byte
  uint32_t subtree_end(size_t n) const { return subtree_end_[n]; }
  // The values whose string ends at node n.
  std::pair<const int32_t*, const int32_t*> values(size_t n) const {
    return {values_.data() + value_begin_[n], values_.data() + value_begin_[n + 1]};
  }
  uint32_t max_depth() const { return max_depth_; }
  size_t memory_bytes() const {
    return bytes_.size() * (1 + 2 * sizeof(uint32_t)) + value_begin_.size() * sizeof(uint32_t) +
           values_.size() * sizeof(int32_t);
  }

 private:
  std::vector<uint8_t> bytes_;
  std::vector<uint32_t> depth_;
  std::vector<uint32_t> subtree_end_;
  std::vector<uint32_t> value_begin_;  // size() + 1 entries
  std::vector<int32_t> values_;
  uint32_t max_depth_ = 0;
};

}  // namespace qmlx::grammar
