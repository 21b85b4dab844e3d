#include "text/tokenizer/token_trie.h"

namespace qmlx {

int32_t TokenTrie::child(int32_t node, uint8_t byte) const {
  for (const auto& [b, next] : nodes_[node].children) {
    if (b == byte) return next;
  }
  return -1;
}

void TokenTrie::insert(std::string_view key, int32_t value) {
  if (key.empty()) return;
  first_byte_[static_cast<uint8_t>(key[0])] = true;
  int32_t node = 0;
  for (char c : key) {
    auto byte = static_cast<uint8_t>(c);
    int32_t next = child(node, byte);
    if (next < 0) {
      next = static_cast<int32_t>(nodes_.size());
      nodes_[node].children.emplace_back(byte, next);
      nodes_.emplace_back();
    }
    node = next;
  }
  nodes_[node].value = value;
}

std::pair<size_t, int32_t> TokenTrie::longest_at(std::string_view text, size_t pos,
                                                 const std::function<bool(int32_t)>& accept) const {
  std::pair<size_t, int32_t> best{0, -1};
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    node = child(node, static_cast<uint8_t>(text[i]));
    if (node < 0) break;
    int32_t value = nodes_[node].value;
    if (value >= 0 && accept(value)) best = {i + 1 - pos, value};
  }
  return best;
}

}  // namespace qmlx
