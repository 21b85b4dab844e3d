// A recursive-descent parser of the regex subset that writes grammar text as it goes.
#include "grammar/regex_translation.h"

#include <vector>

#include "grammar/grammar_text.h"
#include "grammar/utf8_ranges.h"

namespace qmlx::grammar {
namespace {

struct Unsupported {
  std::string why;
};

const std::vector<CodePointRange> kDigits = {{'0', '9'}};
const std::vector<CodePointRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// ECMA WhiteSpace and LineTerminator.
const std::vector<CodePointRange> kSpace = {
    {0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
    {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const std::vector<CodePointRange> kLineTerminators = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};

class RegexTranslator {
 public:
  explicit RegexTranslator(std::string_view p) : p_(p) {}

  std::string translate() {
    std::vector<std::string> alternatives;
    do {
      bool anchored_start = consume('^');
      std::string body = sequence(true);
      bool anchored_end = consume('$');
      if (!at_end() && peek() != '|') fail("'$' before the end of the pattern");
      std::string any = std::string(kJsonStringChar) + "*";
      alternatives.push_back((anchored_start ? "" : any + " ") + "(" + body + ")" +
                             (anchored_end ? "" : " " + any));
    } while (consume('|'));
    if (!at_end()) fail("unbalanced ')'");
    return join(alternatives);
  }

 private:
  std::string alternation() {
    std::vector<std::string> alternatives{sequence(false)};
    while (consume('|')) alternatives.push_back(sequence(false));
    return join(alternatives);
  }

  std::string sequence(bool top_level) {
    std::string out;
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (top_level && peek() == '$' && (pos_ + 1 == p_.size() || p_[pos_ + 1] == '|')) break;
      std::string atom = quantified(atom_expression());
      out += (out.empty() ? "" : " ") + atom;
    }
    return out.empty() ? "\"\"" : out;
  }

  std::string quantified(std::string atom) {
    for (;;) {
      std::string suffix;
      if (consume('*')) {
        suffix = "*";
      } else if (consume('+')) {
        suffix = "+";
      } else if (consume('?')) {
        suffix = "?";
      } else if (peek() == '{' && is_counted_repeat()) {
        ++pos_;
        std::string count;
        while (!at_end() && peek() != '}') count += p_[pos_++];
        ++pos_;
        suffix = "{" + count + "}";
      } else {
        return atom;
      }
      consume('?');  // lazy: the same language
      if (peek() == '*' || peek() == '+' || peek() == '?') fail("nested quantifier");
      atom = "(" + atom + ")" + suffix;
    }
  }

  bool is_counted_repeat() const {
    size_t i = pos_ + 1;
    size_t digits = 0;
    while (i < p_.size() && isdigit(static_cast<unsigned char>(p_[i]))) ++i, ++digits;
    if (digits == 0 || digits > 4) return false;
    if (i < p_.size() && p_[i] == ',') {
      ++i;
      size_t more = 0;
      while (i < p_.size() && isdigit(static_cast<unsigned char>(p_[i]))) ++i, ++more;
      if (more > 4) return false;
    }
    return i < p_.size() && p_[i] == '}';
  }

  std::string atom_expression() {
    char c = p_[pos_];
    if (c == '(') {
      ++pos_;
      if (consume('?')) {
        if (!consume(':')) fail("lookaround and named groups");
      }
      if (++depth_ > 100) fail("groups nested too deeply");
      std::string inner = alternation();
      --depth_;
      if (!consume(')')) fail("unbalanced '('");
      return "(" + inner + ")";
    }
    if (c == '[') return chars(char_class());
    if (c == '.') {
      ++pos_;
      return chars(complement(kLineTerminators));
    }
    if (c == '^' || c == '$') fail("anchors inside the pattern");
    if (c == '*' || c == '+' || c == '?') fail("quantifier without an atom");
    if (c == '\\') {
      ++pos_;
      std::vector<CodePointRange> set;
      if (class_escape(set)) return chars(set);
      return chars({{escape_char(), 0}}, true);
    }
    if (c == ')') fail("unbalanced ')'");
    uint32_t cp = utf8_char();
    return chars({{cp, cp}});
  }

  std::string chars(std::vector<CodePointRange> set, bool single = false) {
    if (single) set[0].hi = set[0].lo;
    std::string out = json_string_chars(set);
    return out.empty() ? "[^\\x00-\\U0010ffff]" : out;
  }

  std::vector<CodePointRange> char_class() {
    ++pos_;  // [
    bool negated = consume('^');
    std::vector<CodePointRange> set;
    while (!at_end() && peek() != ']') {
      uint32_t lo;
      if (peek() == '\\') {
        ++pos_;
        if (class_escape(set)) continue;
        lo = peek() == 'b' ? (++pos_, 8u) : escape_char();
      } else {
        lo = utf8_char();
      }
      uint32_t hi = lo;
      if (peek() == '-' && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        ++pos_;
        if (peek() == '\\') {
          ++pos_;
          std::vector<CodePointRange> dummy;
          if (class_escape(dummy)) fail("a class escape as a range end");
          hi = escape_char();
        } else {
          hi = utf8_char();
        }
        if (hi < lo) fail("reversed range in a class");
      }
      set.push_back({lo, hi});
    }
    if (!consume(']')) fail("unterminated class");
    return negated ? complement(set) : normalized(set);
  }

  // \d \D \w \W \s \S: appends the set and returns true.
  bool class_escape(std::vector<CodePointRange>& set) {
    if (at_end()) fail("trailing backslash");
    char k = peek();
    const std::vector<CodePointRange>* base = nullptr;
    if (k == 'd' || k == 'D') base = &kDigits;
    if (k == 'w' || k == 'W') base = &kWord;
    if (k == 's' || k == 'S') base = &kSpace;
    if (!base) return false;
    ++pos_;
    auto add = isupper(static_cast<unsigned char>(k)) ? complement(*base) : *base;
    set.insert(set.end(), add.begin(), add.end());
    return true;
  }

  uint32_t escape_char() {
    if (at_end()) fail("trailing backslash");
    char k = p_[pos_++];
    switch (k) {
      case 't':
        return '\t';
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 'f':
        return '\f';
      case 'v':
        return '\v';
      case '0':
        return 0;
      case 'x':
        return hex(2);
      case 'u':
        return hex(4);
      default:
        if (isalnum(static_cast<unsigned char>(k))) fail(std::string("the escape \\") + k);
        return static_cast<uint8_t>(k);
    }
  }

  uint32_t hex(int n) {
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      if (at_end() || !isxdigit(static_cast<unsigned char>(peek()))) fail("bad hex escape");
      char c = p_[pos_++];
      v = v * 16 + static_cast<uint32_t>(
                       isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    if (v >= 0xD800 && v <= 0xDFFF) fail("surrogate escapes");
    return v;
  }

  uint32_t utf8_char() {
    auto b = static_cast<uint8_t>(p_[pos_]);
    int n = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
    if (n == 0 || pos_ + n > p_.size()) fail("invalid UTF-8");
    uint32_t cp = n == 1 ? b : b & (0x7F >> n);
    for (int i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<uint8_t>(p_[pos_ + i]) & 0x3F);
    pos_ += n;
    return cp;
  }

  static std::string join(const std::vector<std::string>& alternatives) {
    std::string out;
    for (const auto& a : alternatives) out += (out.empty() ? "" : " | ") + a;
    return alternatives.size() > 1 ? "(" + out + ")" : out;
  }

  bool consume(char c) {
    if (at_end() || p_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  bool at_end() const { return pos_ >= p_.size(); }
  char peek() const { return at_end() ? '\0' : p_[pos_]; }
  [[noreturn]] void fail(const std::string& what) { throw Unsupported{what}; }

  std::string_view p_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

std::optional<std::string> regex_to_string_content(std::string_view pattern, std::string& why) {
  try {
    return RegexTranslator(pattern).translate();
  } catch (const Unsupported& e) {
    why = e.why;
    return std::nullopt;
  }
}

}  // namespace qmlx::grammar
