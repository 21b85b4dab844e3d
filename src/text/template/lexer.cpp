#include "text/template/lexer.h"

#include <array>
#include <cstdlib>

#include "base/error.h"
#include "text/template/py_string.h"

namespace qmlx::jinja {
namespace {

// jinja2 normalises every newline sequence to "\n" and drops one trailing newline.
std::string normalize_source(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Python's `str.isspace` for the UTF-8 code point starting at text[i]; sets `length`.
bool space_at(std::string_view text, size_t i, size_t& length) {
  unsigned char c = static_cast<unsigned char>(text[i]);
  length = 1;
  if (c < 0x80) return py::is_space(c);
  size_t n = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  if (i + n > text.size()) return false;
  std::u32string cp = py::decode_utf8(text.substr(i, n));
  length = n;
  return cp.size() == 1 && py::is_space(cp[0]);
}

size_t skip_spaces(std::string_view text, size_t pos) {
  size_t length;
  while (pos < text.size() && space_at(text, pos, length)) pos += length;
  return pos;
}

// Python's str.rstrip() (all Unicode whitespace).
std::string_view rstrip_view(std::string_view text) {
  std::string stripped = py::strip(text, std::nullopt, false, true);
  return text.substr(0, stripped.size());
}

bool all_spaces(std::string_view text) {
  if (text.empty()) return false;
  return skip_spaces(text, 0) == text.size();
}

class Lexer {
 public:
  Lexer(std::string_view source, const std::string& name, const LexerOptions& options)
      : source_(normalize_source(source)), name_(name), options_(options) {}

  std::vector<Token> run() {
    while (pos_ < source_.size()) lex_text_and_tag();
    push(TokenType::kEnd, "");
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(name_ + ":" + std::to_string(line_) + ": " + what);
  }

  void advance_to(size_t pos) {
    for (size_t i = pos_; i < pos; ++i) line_ += source_[i] == '\n';
    pos_ = pos;
  }

  void push(TokenType type, std::string text) {
    tokens_.push_back(Token{type, std::move(text), line_});
  }

  // Emits the text before the next tag (applying -, + and lstrip_blocks), then the tag.
  void lex_text_and_tag() {
    size_t tag = source_.find('{', pos_);
    while (tag != std::string::npos && tag + 1 < source_.size() && source_[tag + 1] != '{' &&
           source_[tag + 1] != '%' && source_[tag + 1] != '#') {
      tag = source_.find('{', tag + 1);
    }
    if (tag == std::string::npos || tag + 1 >= source_.size()) {
      push(TokenType::kText, source_.substr(pos_));
      advance_to(source_.size());
      return;
    }
    char kind = source_[tag + 1];
    char sign = tag + 2 < source_.size() ? source_[tag + 2] : '\0';
    std::string_view text = std::string_view(source_).substr(pos_, tag - pos_);
    bool line_starting = pos_ == 0 || source_[pos_ - 1] == '\n';
    if (sign == '-') {
      text = rstrip_view(text);
    } else if (sign != '+' && options_.lstrip_blocks && kind != '{') {
      size_t line_start = text.rfind('\n');
      line_start = line_start == std::string_view::npos ? 0 : line_start + 1;
      if ((line_start > 0 || line_starting) && all_spaces(text.substr(line_start))) {
        text = text.substr(0, line_start);
      }
    }
    if (!text.empty()) push(TokenType::kText, std::string(text));
    advance_to(tag);
    size_t after_open = tag + 2 + (sign == '-' || sign == '+' ? 1 : 0);
    if (kind == '#') {
      lex_comment(after_open);
    } else if (kind == '%' && lex_raw(after_open)) {
      return;
    } else {
      lex_tag(kind, after_open);
    }
  }

  // Finishes a closer at `pos`: "-" strips all following whitespace, trim_blocks one "\n".
  size_t after_closer(size_t pos, char strip, bool is_block) {
    if (strip == '-') return skip_spaces(source_, pos);
    if (strip != '+' && is_block && options_.trim_blocks && pos < source_.size() &&
        source_[pos] == '\n') {
      return pos + 1;
    }
    return pos;
  }

  void lex_comment(size_t after_open) {
    size_t end = source_.find("#}", after_open);
    if (end == std::string::npos) fail("unterminated comment");
    char strip = end > after_open ? source_[end - 1] : '\0';
    advance_to(after_closer(end + 2, strip, true));
  }

  // {% raw %}...{% endraw %}: the body is literal text.
  bool lex_raw(size_t after_open) {
    size_t p = skip_spaces(source_, after_open);
    if (source_.compare(p, 3, "raw") != 0) return false;
    p = skip_spaces(source_, p + 3);
    char strip = source_[p] == '-' || source_[p] == '+' ? source_[p++] : '\0';
    if (source_.compare(p, 2, "%}") != 0) return false;
    size_t body = after_closer(p + 2, strip, true);
    size_t search = body;
    while (true) {
      size_t open = source_.find("{%", search);
      if (open == std::string::npos) fail("unterminated {% raw %} block");
      size_t q = open + 2;
      char open_sign = source_[q] == '-' || source_[q] == '+' ? source_[q++] : '\0';
      q = skip_spaces(source_, q);
      if (source_.compare(q, 6, "endraw") != 0) {
        search = open + 2;
        continue;
      }
      q = skip_spaces(source_, q + 6);
      char close_sign = source_[q] == '-' || source_[q] == '+' ? source_[q++] : '\0';
      if (source_.compare(q, 2, "%}") != 0) fail("malformed {% endraw %}");
      std::string_view text = std::string_view(source_).substr(body, open - body);
      if (open_sign == '-') text = rstrip_view(text);
      advance_to(body);
      if (!text.empty()) push(TokenType::kText, std::string(text));
      advance_to(after_closer(q + 2, close_sign, true));
      return true;
    }
  }

  // Checks for the tag closer at `pos` ("}}" or "%}", optionally with a - or + sign).
  bool at_closer(size_t pos, char kind, char& strip, size_t& closer_end) const {
    const char first = kind == '{' ? '}' : '%';
    strip = '\0';
    if (source_[pos] == '-' || (source_[pos] == '+' && kind == '%')) {
      strip = source_[pos];
      ++pos;
    }
    if (pos + 1 < source_.size() && source_[pos] == first && source_[pos + 1] == '}') {
      closer_end = pos + 2;
      return true;
    }
    return false;
  }

  void lex_tag(char kind, size_t after_open) {
    push(kind == '{' ? TokenType::kVariableBegin : TokenType::kBlockBegin, "");
    advance_to(after_open);
    int depth = 0;  // open brackets: closers inside them are operators (as in jinja2)
    while (true) {
      advance_to(skip_spaces(source_, pos_));
      if (pos_ >= source_.size()) fail(kind == '{' ? "unterminated {{ tag" : "unterminated {% tag");
      char strip;
      size_t closer_end;
      if (depth == 0 && at_closer(pos_, kind, strip, closer_end)) {
        push(kind == '{' ? TokenType::kVariableEnd : TokenType::kBlockEnd, "");
        advance_to(after_closer(closer_end, strip, kind == '%'));
        return;
      }
      lex_expression_token(depth);
    }
  }

  void lex_expression_token(int& depth) {
    char c = source_[pos_];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = pos_;
      while (end < source_.size() &&
             (std::isalnum(static_cast<unsigned char>(source_[end])) || source_[end] == '_')) {
        ++end;
      }
      push(TokenType::kName, source_.substr(pos_, end - pos_));
      advance_to(end);
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      lex_number();
    } else if (c == '\'' || c == '"') {
      lex_string(c);
    } else {
      lex_operator(depth);
    }
  }

  void lex_number() {
    size_t end = pos_;
    auto digits = [&] {
      while (end < source_.size() &&
             (std::isdigit(static_cast<unsigned char>(source_[end])) || source_[end] == '_')) {
        ++end;
      }
    };
    digits();
    bool is_float = false;
    if (end + 1 < source_.size() && source_[end] == '.' &&
        std::isdigit(static_cast<unsigned char>(source_[end + 1]))) {
      is_float = true;
      ++end;
      digits();
    }
    if (end < source_.size() && (source_[end] == 'e' || source_[end] == 'E')) {
      size_t exp = end + 1;
      if (exp < source_.size() && (source_[exp] == '+' || source_[exp] == '-')) ++exp;
      if (exp < source_.size() && std::isdigit(static_cast<unsigned char>(source_[exp]))) {
        is_float = true;
        end = exp;
        digits();
      }
    }
    std::string text;
    for (size_t i = pos_; i < end; ++i) {
      if (source_[i] != '_') text.push_back(source_[i]);
    }
    push(is_float ? TokenType::kFloat : TokenType::kInteger, text);
    if (is_float) {
      tokens_.back().number = std::strtod(text.c_str(), nullptr);
    } else {
      tokens_.back().integer = std::strtoll(text.c_str(), nullptr, 10);
    }
    advance_to(end);
  }

  // Python's unicode-escape decoding, as jinja2 applies to string literals.
  void lex_string(char quote) {
    std::string value;
    size_t i = pos_ + 1;
    while (true) {
      if (i >= source_.size()) fail("unterminated string literal");
      char c = source_[i];
      if (c == quote) break;
      if (c != '\\' || i + 1 >= source_.size()) {
        value.push_back(c);
        ++i;
        continue;
      }
      i += decode_escape(i + 1, value) + 1;
    }
    push(TokenType::kString, value);
    advance_to(i + 1);
  }

  // Decodes the escape whose letter is at source_[i]; returns the characters consumed.
  size_t decode_escape(size_t i, std::string& out) {
    char c = source_[i];
    switch (c) {
      case 'n':
        out.push_back('\n');
        return 1;
      case 't':
        out.push_back('\t');
        return 1;
      case 'r':
        out.push_back('\r');
        return 1;
      case '\\':
        out.push_back('\\');
        return 1;
      case '\'':
        out.push_back('\'');
        return 1;
      case '"':
        out.push_back('"');
        return 1;
      case 'a':
        out.push_back('\a');
        return 1;
      case 'b':
        out.push_back('\b');
        return 1;
      case 'f':
        out.push_back('\f');
        return 1;
      case 'v':
        out.push_back('\v');
        return 1;
      case '\n':
        return 1;  // line continuation
      case 'x':
        return 1 + hex_escape(i + 1, 2, out);
      case 'u':
        return 1 + hex_escape(i + 1, 4, out);
      case 'U':
        return 1 + hex_escape(i + 1, 8, out);
      default:
        if (c >= '0' && c <= '7') {
          size_t n = 0;
          char32_t cp = 0;
          while (n < 3 && i + n < source_.size() && source_[i + n] >= '0' &&
                 source_[i + n] <= '7') {
            cp = cp * 8 + (source_[i + n] - '0');
            ++n;
          }
          py::append_utf8(out, cp);
          return n;
        }
        out.push_back('\\');  // unknown escapes keep their backslash
        return 0;
    }
  }

  size_t hex_escape(size_t i, size_t digits, std::string& out) {
    if (i + digits > source_.size()) fail("truncated \\x/\\u escape in string literal");
    std::string hex = source_.substr(i, digits);
    if (hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
      fail("invalid \\x/\\u escape in string literal");
    }
    py::append_utf8(out, static_cast<char32_t>(std::strtoul(hex.c_str(), nullptr, 16)));
    return digits;
  }

  void lex_operator(int& depth) {
    static constexpr std::array<std::string_view, 6> kTwoChar = {
        "//", "**", "==", "!=", ">=", "<="};
    for (std::string_view op : kTwoChar) {
      if (source_.compare(pos_, 2, op) == 0) {
        push(TokenType::kOperator, std::string(op));
        advance_to(pos_ + 2);
        return;
      }
    }
    char c = source_[pos_];
    if (std::string_view("+-*/%~<>=.:|,()[]{};").find(c) == std::string_view::npos) {
      fail(std::string("unexpected character '") + c + "' in tag");
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
    push(TokenType::kOperator, std::string(1, c));
    advance_to(pos_ + 1);
  }

  std::string source_;
  const std::string& name_;
  LexerOptions options_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const std::string& name,
                            const LexerOptions& options) {
  return Lexer(source, name, options).run();
}

}  // namespace qmlx::jinja
