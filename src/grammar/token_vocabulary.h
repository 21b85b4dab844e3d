// TokenVocabulary: what the grammar engine needs to know of a model's vocabulary, built once
// per tokenizer: each id's raw bytes, which ids are special (never allowed by a grammar), which
// ids end the turn (allowed once the grammar is complete), and a byte trie of the ordinary
// tokens for mask computation.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "grammar/byte_trie.h"

namespace qmlx {
class Tokenizer;
}

namespace qmlx::grammar {

class TokenVocabulary {
 public:
  // token_bytes[id] is the token's decoded bytes; special[id] marks special tokens.
  TokenVocabulary(std::vector<std::string> token_bytes, std::vector<bool> special,
                  std::vector<int32_t> stop_token_ids);
  // `matchable_special_ids`: special tokens a grammar may still match by their text (the
  // tool-call tags, which some tokenizers flag special and models write as one token).
  static std::shared_ptr<const TokenVocabulary> from_tokenizer(
      const Tokenizer& tokenizer, std::vector<int32_t> stop_token_ids,
      const std::vector<int32_t>& matchable_special_ids = {});

  int32_t size() const { return static_cast<int32_t>(bytes_.size()); }
  // Words of a bitmask covering every id.
  size_t mask_words() const { return (bytes_.size() + 63) / 64; }
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  bool is_special(int32_t id) const { return special_[static_cast<size_t>(id)]; }
  bool is_stop(int32_t id) const;
  std::span<const int32_t> stop_token_ids() const { return stop_ids_; }
  const ByteTrie& trie() const { return trie_; }
  // A hash of every id's bytes, specialness and the stop ids: keys compiled-grammar caches.
  uint64_t fingerprint() const { return fingerprint_; }

 private:
  std::vector<std::string> bytes_;
  std::vector<bool> special_;
  std::vector<int32_t> stop_ids_;
  ByteTrie trie_;
  uint64_t fingerprint_ = 0;
};

}  // namespace qmlx::grammar
