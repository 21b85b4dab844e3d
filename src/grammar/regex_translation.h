// ECMA-262 regular expressions (the JSON Schema `pattern` dialect) translated into a grammar
// expression for a JSON string's content in canonical form. The subset supported:
//   literals and escapes \t \n \r \f \v \0 \xHH \uHHHH and escaped punctuation;
//   . (any character but line terminators), classes [...] / [^...] with ranges,
//   \d \D \w \W \s \S inside and outside classes;
//   groups (...) and (?:...), alternation |, quantifiers * + ? {n} {n,} {n,m} (lazy forms are
//   the same language); ^ at the start and $ at the end of the pattern or of a top-level
//   alternative. A pattern is unanchored otherwise (any characters may surround the match).
// Not supported (the keyword is reported): backreferences, lookaround, \b \B, named groups,
// \p{...}, flags, anchors elsewhere.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace qmlx::grammar {

// The content expression, or nullopt with `why` saying what is unsupported.
std::optional<std::string> regex_to_string_content(std::string_view pattern, std::string& why);

}  // namespace qmlx::grammar
