// The tokenizer files of a generated model: tokenizer.json in the Hugging Face format of the
// real Qwen tokenizers (BPE model, NFC normaliser, Split(Qwen regex) + ByteLevel
// pre-tokenizer, ByteLevel decoder, the Qwen special tokens as added tokens flagged as the
// real file flags them) and tokenizer_config.json with the chat template.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "modelgen/bpe_trainer.h"
#include "modelgen/model_options.h"

namespace qmlx::modelgen {

// The Qwen special tokens, in id order.
const std::vector<std::string>& qwen_special_tokens();
// Whether the real tokenizer.json flags the index-th of them "special" (llama.cpp: a control
// token): the chat markers and the vision markers, not the tool and think tags.
bool qwen_special_is_flagged(size_t index);

class Vocabulary {
 public:
  // 256 byte tokens then `merge_count` merges learned from builtin_corpus().
  static Vocabulary demo(int merge_count = 300);

  // Adds a token reachable by no merge (never produced by encoding); returns its id.
  // Must be called before specials are assigned ids, i.e. before special_id().
  int add_plain_token(const std::string& byte_level);

  std::optional<int> plain_id(const std::string& byte_level) const;
  int special_id(const std::string& content) const;  // throws for an unknown special
  int size() const;                                  // plain tokens + specials
  // The tokens a random model gives weights to: all of them, or, for a model without a vision
  // tower, all but the vision markers (the last specials), whose rows then stay zero like the
  // padding rows, so such a model keeps the weights it had before the markers existed.
  int rows_in_use(bool vision) const;
  int plain_count() const { return static_cast<int>(tokens_.size()); }
  const std::string& plain_token(int id) const { return tokens_.at(id); }
  const std::vector<Merge>& merges() const { return merges_; }

 private:
  std::vector<std::string> tokens_;  // id -> byte-level string
  std::vector<Merge> merges_;
};

nlohmann::json tokenizer_json(const Vocabulary& vocabulary, Arch arch);
nlohmann::json tokenizer_config_json(const Vocabulary& vocabulary,
                                     const std::string& chat_template);

}  // namespace qmlx::modelgen
