// PreTokenizer: splits normalized text into the pieces BPE runs on independently (Qwen: a
// Split regex separating words, numbers, punctuation and whitespace, then ByteLevel mapping
// bytes to the vocabulary's alphabet). Built from the "pre_tokenizer" object; immutable and
// thread-safe.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "text/tokenizer/piece_list.h"

namespace qmlx {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Reads `in`, writes the resulting pieces to `out` (cleared first).
  virtual void pre_tokenize(const PieceList& in, PieceList& out) const = 0;
};

// Supports Split, ByteLevel, Sequence, Metaspace, Whitespace, WhitespaceSplit and Digits.
// Returns nullptr for a JSON null; throws qmlx::Error naming the type and `context` otherwise.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& spec,
                                                 const std::string& context);

}  // namespace qmlx
