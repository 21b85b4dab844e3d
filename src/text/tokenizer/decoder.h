// Decoder: the "decoder" section of tokenizer.json, turning token strings back into text
// (Qwen: ByteLevel, mapping the vocabulary alphabet back to raw bytes). Works on the list of
// token strings, like Hugging Face's decode_chain; the caller joins the result and repairs
// invalid UTF-8 once at the end, so token-by-token output can be partial characters.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace qmlx {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
  // True when decoding a sequence equals concatenating what each token decodes to alone,
  // which lets streaming work token by token instead of re-decoding.
  virtual bool is_per_token() const { return true; }
};

// Supports ByteLevel, Sequence, Replace, ByteFallback, Fuse, Strip and Metaspace. Returns
// nullptr for a JSON null; throws qmlx::Error naming the type and `context` otherwise.
std::unique_ptr<Decoder> make_decoder(const nlohmann::json& spec, const std::string& context);

}  // namespace qmlx
