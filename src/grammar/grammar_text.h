// Helpers for writing grammar text (the syntax of grammar_parser.h) from code: literals and
// classes quoted safely, and the JSON string character sets the schema compiler shares.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "grammar/utf8_ranges.h"

namespace qmlx::grammar {

// `bytes` as a grammar literal: "..." with every byte outside printable ASCII escaped.
std::string grammar_literal(std::string_view bytes);
// A character class of the code point ranges (which must be non-empty).
std::string grammar_class(const std::vector<CodePointRange>& ranges);

// One character inside a JSON string in canonical form (as nlohmann::json dumps it): any code
// point except '"', '\' and controls written raw; those as \" \\ \b \f \n \r \t or \u00xx.
// Inlined (not a rule) so a string's characters stay within the string's own rule.
inline constexpr std::string_view kJsonStringChar =
    R"(([^"\\\x00-\x1f] | "\\" (["\\bfnrt] | "u00" [01] [0-9a-f])))";

// The JSON string content characters, in canonical form, whose decoded code point is in
// `ranges`: raw where raw is canonical, else the canonical escape. "" when none.
std::string json_string_chars(const std::vector<CodePointRange>& ranges);

}  // namespace qmlx::grammar
