// Regex: a compiled PCRE2 pattern (UTF-8, Unicode properties, JIT) used for the Split
// pre-tokenizer and Replace components. tokenizer.json patterns are written for Oniguruma;
// the constructs they use (\p{L}, \s, look-ahead, (?i:...)) mean the same in PCRE2 with UCP.
// Immutable after construction, so one instance serves concurrent encodes.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace qmlx {

class Regex {
 public:
  // literal: match `pattern` as plain text. Throws qmlx::Error (with `context`) when the
  // pattern does not compile.
  Regex(const std::string& pattern, bool literal, const std::string& context);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Calls on_match(start, end) for every non-empty, non-overlapping match, left to right.
  // `text` must be valid UTF-8.
  void for_each_match(std::string_view text,
                      const std::function<void(size_t, size_t)>& on_match) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

// Compiles a tokenizer.json pattern object: {"String": "..."} (literal) or {"Regex": "..."}.
std::unique_ptr<Regex> regex_from_pattern(const nlohmann::json& pattern,
                                          const std::string& context);

// Every match of `regex` in `text` replaced by `content`.
std::string replace_all(const Regex& regex, std::string_view text, std::string_view content);

}  // namespace qmlx
