// A recursive-descent parser for the syntax in grammar_parser.h.
#include "grammar/grammar_parser.h"

#include <set>

namespace qmlx::grammar {
namespace {

constexpr uint32_t kMaxRepeat = 100000;
constexpr int kMaxNesting = 256;  // parentheses; keeps the recursion off the stack's end

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  GrammarAst parse() {
    GrammarAst ast;
    std::set<std::string> names;
    skip_space();
    while (!at_end()) {
      std::string name = identifier();
      if (name.empty()) fail("expected a rule name");
      skip_space();
      if (!consume("::=")) fail("expected '::=' after rule name '" + name + "'");
      if (!names.insert(name).second) fail("rule '" + name + "' defined twice");
      Expr body = alternation();
      ast.rules.emplace_back(std::move(name), std::move(body));
      skip_space();
    }
    return ast;
  }

 private:
  Expr alternation() {
    if (++depth_ > kMaxNesting) fail("groups nested deeper than " + std::to_string(kMaxNesting));
    Expr alt;
    alt.kind = Expr::Kind::kAlternation;
    alt.children.push_back(sequence());
    skip_space();
    while (consume("|")) {
      alt.children.push_back(sequence());
      skip_space();
    }
    --depth_;
    if (alt.children.size() == 1) return std::move(alt.children[0]);
    return alt;
  }

  Expr sequence() {
    Expr seq;
    seq.kind = Expr::Kind::kSequence;
    for (;;) {
      skip_space();
      if (at_end() || peek() == '|' || peek() == ')' || starts_rule()) break;
      seq.children.push_back(postfix(primary()));
    }
    if (seq.children.size() == 1) return std::move(seq.children[0]);
    return seq;
  }

  Expr postfix(Expr e) {
    for (;;) {
      uint32_t min, max;
      if (consume("*")) {
        min = 0, max = Expr::kUnbounded;
      } else if (consume("+")) {
        min = 1, max = Expr::kUnbounded;
      } else if (consume("?")) {
        min = 0, max = 1;
      } else if (peek() == '{') {
        ++pos_;
        min = number();
        max = min;
        if (consume(",")) max = peek() == '}' ? Expr::kUnbounded : number();
        if (!consume("}")) fail("expected '}' closing a repetition");
        if (max < min)
          fail("repetition {" + std::to_string(min) + "," + std::to_string(max) +
               "} has max < min");
      } else {
        return e;
      }
      Expr r;
      r.kind = Expr::Kind::kRepeat;
      r.min = min;
      r.max = max;
      r.children.push_back(std::move(e));
      e = std::move(r);
    }
  }

  Expr primary() {
    char c = peek();
    if (c == '"') return literal();
    if (c == '[') return char_class();
    if (c == '.') {
      ++pos_;
      Expr e;
      e.kind = Expr::Kind::kClass;
      e.ranges = complement({});
      return e;
    }
    if (c == '(') {
      ++pos_;
      Expr inner = alternation();
      skip_space();
      if (!consume(")")) fail("expected ')'");
      return inner;
    }
    std::string name = identifier();
    if (name.empty()) fail(std::string("unexpected character '") + c + "'");
    Expr e;
    e.kind = Expr::Kind::kRef;
    e.name = std::move(name);
    return e;
  }

  Expr literal() {
    ++pos_;  // opening quote
    Expr e;
    e.kind = Expr::Kind::kLiteral;
    for (;;) {
      if (at_end()) fail("unterminated string literal");
      char c = text_[pos_++];
      if (c == '"') break;
      if (c != '\\') {
        e.bytes += c;
        continue;
      }
      if (at_end()) fail("unterminated escape");
      char k = text_[pos_++];
      if (k == 'x') {
        e.bytes += static_cast<char>(hex(2));
      } else {
        append_utf8(escape_code_point(k), e.bytes);
      }
    }
    return e;
  }

  Expr char_class() {
    ++pos_;  // [
    bool negated = consume("^");
    std::vector<CodePointRange> ranges;
    for (;;) {
      if (at_end()) fail("unterminated character class");
      if (peek() == ']') {
        ++pos_;
        break;
      }
      uint32_t lo = class_char();
      uint32_t hi = lo;
      if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        hi = class_char();
        if (hi < lo) fail("character range is reversed");
      }
      ranges.push_back({lo, hi});
    }
    Expr e;
    e.kind = Expr::Kind::kClass;
    e.ranges = negated ? complement(std::move(ranges)) : normalized(std::move(ranges));
    return e;
  }

  uint32_t class_char() {
    if (peek() != '\\') return utf8_char();
    ++pos_;
    if (at_end()) fail("unterminated escape");
    char k = text_[pos_++];
    if (k == 'x') return hex(2);
    return escape_code_point(k);
  }

  uint32_t escape_code_point(char k) {
    switch (k) {
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case '0':
        return 0;
      case 'u':
        return hex(4);
      case 'U':
        return hex(8);
      case '\\':
      case '"':
      case '\'':
      case '[':
      case ']':
      case '-':
      case '^':
        return static_cast<uint8_t>(k);
      default:
        fail(std::string("unknown escape '\\") + k + "'");
    }
  }

  uint32_t utf8_char() {
    auto b = static_cast<uint8_t>(text_[pos_]);
    int n = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
    if (n == 0 || pos_ + n > text_.size()) fail("invalid UTF-8 in character class");
    uint32_t cp = n == 1 ? b : b & (0x7F >> n);
    for (int i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<uint8_t>(text_[pos_ + i]) & 0x3F);
    pos_ += n;
    return cp;
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (at_end() || !isxdigit(static_cast<unsigned char>(peek())))
        fail("expected " + std::to_string(digits) + " hex digits");
      char c = text_[pos_++];
      v = v * 16 + static_cast<uint32_t>(
                       isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    if (v > 0x10FFFF) fail("code point out of range");
    return v;
  }

  uint32_t number() {
    uint64_t v = 0;
    size_t start = pos_;
    while (!at_end() && isdigit(static_cast<unsigned char>(peek()))) {
      v = v * 10 + static_cast<uint64_t>(text_[pos_++] - '0');
      if (v > kMaxRepeat) fail("repetition count above " + std::to_string(kMaxRepeat));
    }
    if (pos_ == start) fail("expected a number");
    return static_cast<uint32_t>(v);
  }

  std::string identifier() {
    size_t start = pos_;
    while (!at_end() &&
           (isalnum(static_cast<unsigned char>(peek())) || peek() == '_' || peek() == '-'))
      ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  bool starts_rule() {
    size_t saved = pos_;
    bool is_rule = !identifier().empty();
    if (is_rule) {
      skip_space();
      is_rule = text_.substr(pos_, 3) == "::=";
    }
    pos_ = saved;
    return is_rule;
  }

  void skip_space() {
    while (!at_end()) {
      char c = peek();
      if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else {
        break;
      }
    }
  }

  bool consume(std::string_view s) {
    if (text_.substr(pos_, s.size()) != s) return false;
    pos_ += s.size();
    return true;
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  [[noreturn]] void fail(const std::string& what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw GrammarError("grammar syntax error at line " + std::to_string(line) + ", column " +
                       std::to_string(column) + ": " + what);
  }

  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

GrammarAst parse_grammar(std::string_view text) { return Parser(text).parse(); }

}  // namespace qmlx::grammar
