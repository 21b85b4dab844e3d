// HfTokenizer: the Tokenizer built from a Hugging Face tokenizer.json, wiring its parts in
// the library's order: added tokens cut out of the raw text, normalizer, added tokens on
// normalized text, pre-tokenizer, BPE model; and for decoding, the decoder chain. The
// post_processor is deliberately ignored: qmlx encodes chat prompts whose templates already
// write every special token, and Qwen adds no BOS.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "text/tokenizer/added_vocabulary.h"
#include "text/tokenizer/bpe_model.h"
#include "text/tokenizer/decoder.h"
#include "text/tokenizer/normalizer.h"
#include "text/tokenizer/pre_tokenizer.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx {

class HfTokenizer : public Tokenizer {
 public:
  // `context` names the source (file path) in error messages.
  HfTokenizer(const nlohmann::json& tokenizer_json, const std::string& context);

  std::vector<int32_t> encode(std::string_view text, bool parse_special) const override;
  std::string decode(std::span<const int32_t> ids, bool skip_special) const override;
  std::optional<int32_t> token_id(std::string_view token) const override;
  std::string token_text(int32_t id) const override;
  std::string token_bytes(int32_t id) const override;
  bool is_special(int32_t id) const override;
  int32_t vocab_size() const override;
  bool decodes_per_token() const override;

 private:
  // Normalizes, pre-tokenizes and BPE-encodes one stretch of text between added tokens.
  void encode_text(std::string_view text, bool at_origin, bool parse_special,
                   std::vector<int32_t>& ids) const;
  void encode_normalized(std::string_view text, bool at_origin, std::vector<int32_t>& ids) const;
  const std::string* raw_token(int32_t id) const;

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<Decoder> decoder_;
  AddedVocabulary added_;
};

}  // namespace qmlx
