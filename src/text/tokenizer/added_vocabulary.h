// AddedVocabulary: the tokenizer.json "added_tokens" (chat control tokens such as
// <|im_start|>, and extra words such as <think>). They are cut out of the text before
// normalization and BPE so they always map to their own id, honouring the per-token flags:
// special (skipped by decode(skip_special) and not recognised when parse_special is off),
// lstrip/rstrip (absorb neighbouring whitespace), single_word (only between non-word
// characters) and normalized (matched after normalization instead of on the raw text).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "text/tokenizer/piece_cache.h"
#include "text/tokenizer/token_trie.h"

namespace qmlx {

class Normalizer;

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool single_word = false;
};

class AddedVocabulary {
 public:
  // A stretch of text: either one added token (id >= 0) or text for the model (id == -1).
  struct Segment {
    std::string_view text;
    int32_t id;
  };

  AddedVocabulary() = default;
  // `normalizer` (may be null) is applied to the content of normalized tokens so they match
  // normalized text.
  AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer);

  // Splits `text` around the tokens of one pass: those matched on raw text
  // (normalized == false) or those matched on normalized text.
  void split(std::string_view text, bool normalized_pass, bool parse_special,
             std::vector<Segment>& out) const;

  const AddedToken* find(int32_t id) const;
  std::optional<int32_t> find(std::string_view content) const;
  bool has_normalized_tokens() const { return has_normalized_; }
  int32_t id_limit() const { return id_limit_; }

 private:
  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> by_id_;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> by_content_;
  TokenTrie raw_trie_, normalized_trie_;
  bool has_normalized_ = false;
  int32_t id_limit_ = 0;
};

// Parses the "added_tokens" array.
std::vector<AddedToken> parse_added_tokens(const nlohmann::json& added_tokens,
                                           const std::string& context);

}  // namespace qmlx
