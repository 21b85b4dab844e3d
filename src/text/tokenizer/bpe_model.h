// BpeModel: the "model" section of tokenizer.json. Turns one pre-tokenized piece into ids by
// starting from its characters and repeatedly applying the lowest-ranked merge (leftmost on
// ties), exactly like Hugging Face's BPE. Merge ranks live in a hash map keyed by the id
// pair, and finished pieces are cached. Immutable apart from the cache; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "text/tokenizer/merge_table.h"
#include "text/tokenizer/piece_cache.h"

namespace qmlx {

class BpeModel {
 public:
  // Throws qmlx::Error (naming `context`) for non-BPE models and inconsistent merges.
  static std::unique_ptr<BpeModel> from_json(const nlohmann::json& model,
                                             const std::string& context);

  // Appends the ids of `piece`.
  void tokenize(std::string_view piece, std::vector<int32_t>& ids) const;

  std::optional<int32_t> token_id(std::string_view token) const;
  // nullptr when the id is not in the vocabulary.
  const std::string* token_text(int32_t id) const;
  // One past the largest vocabulary id.
  int32_t id_limit() const { return static_cast<int32_t>(id_to_token_.size()); }

 private:
  using Merge = MergeTable::Merge;
  const Merge* find_merge(int32_t left, int32_t right) const { return merges_.find(left, right); }

  void load_vocab(const nlohmann::json& vocab, const std::string& context);
  void load_merges(const nlohmann::json& merges, const std::string& context);
  std::vector<int32_t> initial_symbols(std::string_view piece) const;
  void append_unknown(std::vector<int32_t>& symbols, std::string_view character) const;
  void build_char_table();
  std::optional<int32_t> char_id(std::string_view character) const;
  void merge_small(std::vector<int32_t>& symbols) const;
  void merge_large(std::vector<int32_t>& symbols) const;
  std::vector<int32_t> tokenize_uncached(std::string_view piece) const;

  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_token_;
  MergeTable merges_;
  // Ids of single-character tokens for code points below kCharTableSize (-1: not in the
  // vocab). Covers the whole byte-level alphabet, so byte-level BPE never hashes a character.
  static constexpr char32_t kCharTableSize = 0x200;
  std::vector<int32_t> char_table_;
  std::optional<int32_t> unk_id_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  PieceCache cache_;
};

}  // namespace qmlx
