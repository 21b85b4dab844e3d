#include "text/tokenizer/added_vocabulary.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "text/tokenizer/normalizer.h"
#include "text/tokenizer/unicode.h"
#include "text/tokenizer/utf8.h"

namespace qmlx {
namespace {

// The code point ending just before `end` (text[0, end) is valid UTF-8 and non-empty).
char32_t last_char(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
  return utf8::decode_at(text, start);
}

// Where the run of whitespace that ends at `end` begins.
size_t whitespace_run_start(std::string_view text, size_t end) {
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
    size_t probe = start;
    if (!unicode::is_whitespace(utf8::decode_at(text, probe))) break;
    end = start;
  }
  return end;
}

// Where the run of whitespace that starts at `start` ends.
size_t whitespace_run_end(std::string_view text, size_t start) {
  while (start < text.size()) {
    size_t next = start;
    if (!unicode::is_whitespace(utf8::decode_at(text, next))) break;
    start = next;
  }
  return start;
}

bool is_single_word(std::string_view text, size_t start, size_t end) {
  if (start > 0 && unicode::is_word_char(last_char(text, start))) return false;
  if (end < text.size()) {
    size_t at = end;
    if (unicode::is_word_char(utf8::decode_at(text, at))) return false;
  }
  return true;
}

}  // namespace

std::vector<AddedToken> parse_added_tokens(const nlohmann::json& added_tokens,
                                           const std::string& context) {
  std::vector<AddedToken> tokens;
  if (added_tokens.is_null()) return tokens;
  for (const auto& entry : added_tokens) {
    AddedToken t;
    t.id = entry.at("id").get<int32_t>();
    t.content = entry.at("content").get<std::string>();
    t.special = entry.value("special", false);
    t.lstrip = entry.value("lstrip", false);
    t.rstrip = entry.value("rstrip", false);
    t.normalized = entry.value("normalized", !t.special);
    t.single_word = entry.value("single_word", false);
    if (t.id < 0 || t.content.empty() || !utf8::is_valid(t.content)) {
      throw Error(context + ": invalid added token " + entry.dump());
    }
    tokens.push_back(std::move(t));
  }
  return tokens;
}

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer)
    : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& t = tokens_[i];
    by_id_[t.id] = i;
    by_content_[t.content] = t.id;
    id_limit_ = std::max(id_limit_, t.id + 1);
    if (!t.normalized) {
      raw_trie_.insert(t.content, static_cast<int32_t>(i));
      continue;
    }
    has_normalized_ = true;
    std::string key = t.content;
    if (normalizer) normalizer->normalize(key);
    normalized_trie_.insert(key, static_cast<int32_t>(i));
  }
}

const AddedToken* AddedVocabulary::find(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

std::optional<int32_t> AddedVocabulary::find(std::string_view content) const {
  auto it = by_content_.find(content);
  if (it == by_content_.end()) return std::nullopt;
  return it->second;
}

void AddedVocabulary::split(std::string_view text, bool normalized_pass, bool parse_special,
                            std::vector<Segment>& out) const {
  const TokenTrie& trie = normalized_pass ? normalized_trie_ : raw_trie_;
  auto accept = [&](int32_t index) { return parse_special || !tokens_[index].special; };
  size_t emitted = 0;  // end of the last segment written
  size_t pos = 0;
  while (pos < text.size()) {
    if (!trie.may_start_at(text, pos)) {
      ++pos;
      continue;
    }
    auto [length, index] = trie.longest_at(text, pos, accept);
    if (index < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[index];
    size_t start = pos, end = pos + length;
    pos = end;
    if (token.single_word && !is_single_word(text, start, end)) continue;
    if (token.lstrip) start = std::max(whitespace_run_start(text, start), emitted);
    if (token.rstrip) end = whitespace_run_end(text, end);
    if (start > emitted) out.push_back({text.substr(emitted, start - emitted), -1});
    out.push_back({text.substr(start, end - start), token.id});
    emitted = end;
    pos = std::max(pos, end);
  }
  if (emitted < text.size()) out.push_back({text.substr(emitted), -1});
}

}  // namespace qmlx
