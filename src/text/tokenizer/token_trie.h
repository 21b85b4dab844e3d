// TokenTrie: a byte trie over the added tokens' strings, answering "which is the longest
// token starting exactly here". Scanning a text position by position with it gives the
// leftmost-longest matching Hugging Face gets from Aho-Corasick; a first-byte table makes
// positions that start no token (nearly all of them) cost one lookup.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace qmlx {

class TokenTrie {
 public:
  void insert(std::string_view key, int32_t value);

  // Longest key that `text` starts with at `pos` and that `accept` allows:
  // {length, value}, or {0, -1} when there is none.
  std::pair<size_t, int32_t> longest_at(std::string_view text, size_t pos,
                                        const std::function<bool(int32_t)>& accept) const;

  bool may_start_at(std::string_view text, size_t pos) const {
    return first_byte_[static_cast<uint8_t>(text[pos])];
  }

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;
    int32_t value = -1;
  };
  int32_t child(int32_t node, uint8_t byte) const;

  std::vector<Node> nodes_{1};
  std::array<bool, 256> first_byte_{};
};

}  // namespace qmlx
