// Hand-made tokenizer.json documents for the unit tests: small enough that every expected id
// can be worked out by hand from the fixture itself.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/tokenizer/byte_level.h"

namespace qmlx::testing {

// The byte-level character string for raw bytes (what a byte-level vocab stores).
inline std::string bl(const std::string& bytes) {
  std::string out;
  byte_level::encode(bytes, out);
  return out;
}

// A byte-level BPE tokenizer: byte b has id b; each merge "x y" (given as raw bytes) adds the
// token xy with the next id, 256 upward, in the order given. No normalizer; pre-tokenizer and
// decoder ByteLevel without regex or prefix space.
inline nlohmann::json byte_level_tokenizer(
    const std::vector<std::pair<std::string, std::string>>& merges) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[bl(std::string(1, static_cast<char>(b)))] = b;
  nlohmann::json merge_list = nlohmann::json::array();
  int next = 256;
  for (const auto& [left, right] : merges) {
    merge_list.push_back(bl(left) + " " + bl(right));
    if (!vocab.contains(bl(left + right))) vocab[bl(left + right)] = next++;
  }
  nlohmann::json byte_level = {{"type", "ByteLevel"},
                               {"add_prefix_space", false},
                               {"trim_offsets", false},
                               {"use_regex", false}};
  return {{"version", "1.0"},
          {"added_tokens", nlohmann::json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer", byte_level},
          {"post_processor", nullptr},
          {"decoder", byte_level},
          {"model",
           {{"type", "BPE"}, {"vocab", vocab}, {"merges", merge_list}, {"ignore_merges", false}}}};
}

inline nlohmann::json added_token(int id, const std::string& content, bool special,
                                  bool lstrip = false, bool rstrip = false, bool normalized = false,
                                  bool single_word = false) {
  return {{"id", id},
          {"content", content},
          {"special", special},
          {"lstrip", lstrip},
          {"rstrip", rstrip},
          {"normalized", normalized},
          {"single_word", single_word}};
}

}  // namespace qmlx::testing
