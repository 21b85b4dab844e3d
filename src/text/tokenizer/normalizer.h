// Normalizer: the first stage of tokenizer.json encoding, rewriting text before it is split
// (Qwen uses NFC so that composed and decomposed input give the same tokens). Built from the
// "normalizer" object; components are immutable and safe to share across threads.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace qmlx {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // `text` is valid UTF-8 and stays so.
  virtual void normalize(std::string& text) const = 0;
};

// Supports NFC, NFD, NFKC, NFKD, Lowercase, Replace, Prepend, Strip and Sequence. Returns
// nullptr for a JSON null. Throws qmlx::Error naming the type and `context` otherwise.
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& spec, const std::string& context);

}  // namespace qmlx
