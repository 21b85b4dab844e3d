// Lexer: splits template source into text and tag tokens the way jinja2's lexer does with
// Hugging Face's settings (trim_blocks and lstrip_blocks on, keep_trailing_newline off).
// Whitespace control is resolved here, so the parser only sees final text and expression
// tokens. Every token carries its 1-based source line for error messages.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qmlx::jinja {

enum class TokenType {
  kText,           // literal template text, whitespace control already applied
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,
  kString,  // text holds the decoded value
  kInteger,
  kFloat,
  kOperator,  // text holds the operator: "+", "//", "==", "(", ...
  kEnd,
};

struct Token {
  TokenType type;
  std::string text;
  int line = 0;
  int64_t integer = 0;
  double number = 0;
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Throws qmlx::Error "<name>:<line>: ..." on malformed input (unterminated tag or string).
std::vector<Token> tokenize(std::string_view source, const std::string& name,
                            const LexerOptions& options = {});

}  // namespace qmlx::jinja
