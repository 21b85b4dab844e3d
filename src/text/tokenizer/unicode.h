// Unicode services the tokenizer components need beyond UTF-8 decoding: normalization forms,
// case mapping and the character classes Hugging Face's Rust code tests with
// (char::is_whitespace, char::is_numeric, regex \w). Backed by ICU so the data matches a
// real Unicode version instead of hand-copied tables.
#pragma once

#include <string>
#include <string_view>

namespace qmlx::unicode {

enum class NormalForm { kNFC, kNFD, kNFKC, kNFKD };

// `text` must be valid UTF-8. Already-normalized text (the common case) is left untouched.
void normalize(NormalForm form, std::string& text);

// Full (not per-character) lowercase mapping in the root locale, as Rust's str::to_lowercase.
std::string to_lower(std::string_view text);

// Unicode White_Space.
bool is_whitespace(char32_t cp);
// General category N (Nd, Nl, No).
bool is_numeric(char32_t cp);
// Unicode \w: Alphabetic, M, Nd, Pc, Join_Control.
bool is_word_char(char32_t cp);

}  // namespace qmlx::unicode
