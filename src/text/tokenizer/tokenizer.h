// Tokenizer: a Hugging Face `tokenizer.json` byte-level BPE tokenizer (Qwen family and other
// common chat models), producing exactly the ids the Python/JS `tokenizers` library produces.
// Added/special tokens are matched before BPE. Thread-safe for concurrent encode/decode.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace qmlx {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Loads `<path>` (a tokenizer.json file, or a model folder containing one). Throws
  // qmlx::Error naming the file and the unsupported component on anything it cannot honour.
  static std::unique_ptr<Tokenizer> from_file(const std::string& path);
  // Builds from an already-parsed tokenizer.json document (also used for GGUF vocabularies).
  static std::unique_ptr<Tokenizer> from_json(const nlohmann::json& tokenizer_json);

  // parse_special: recognise special tokens (added tokens flagged "special", such as
  // <|im_start|>) written literally in `text`. When false they are tokenized as plain text;
  // non-special added tokens (Qwen3's <think>, <tool_call>) still match, as in Hugging Face's
  // split_special_tokens mode. Invalid UTF-8 in `text` is replaced by U+FFFD first.
  virtual std::vector<int32_t> encode(std::string_view text, bool parse_special = true) const = 0;
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special = false) const = 0;

  virtual std::optional<int32_t> token_id(std::string_view token) const = 0;
  // The token's own string as stored in the vocabulary (byte-level form for BPE tokens).
  virtual std::string token_text(int32_t id) const = 0;
  // The raw bytes this single token decodes to (may be a partial UTF-8 sequence).
  virtual std::string token_bytes(int32_t id) const = 0;
  virtual bool is_special(int32_t id) const = 0;
  // One past the largest id the tokenizer can produce.
  virtual int32_t vocab_size() const = 0;
  // True when decode(ids) equals the UTF-8 repair of the concatenated token_bytes (so text can
  // be streamed token by token); false for position-dependent decoders such as Metaspace.
  virtual bool decodes_per_token() const { return true; }
};

// Turns a growing id sequence into text, emitting only complete UTF-8; the concatenation of
// everything push() and finish() return equals tokenizer.decode(all ids).
class StreamingDetokenizer {
 public:
  StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special = false);
  std::string push(int32_t id);
  // Whatever remains (an incomplete trailing sequence is emitted as decode() would).
  std::string finish();
  // Whether bytes of the ids pushed so far wait for the rest of their character: the text of
  // the last id is complete only when nothing is held.
  bool holds_partial() const { return holds_partial_; }

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::vector<int32_t> ids_;
  size_t emitted_bytes_ = 0;
  std::string pending_;
  bool holds_partial_ = false;
};

}  // namespace qmlx
