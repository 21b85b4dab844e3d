#include "text/template/parser.h"

#include <set>

#include "base/error.h"
#include "text/template/builtins.h"

namespace qmlx::jinja {
namespace {

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, const std::string& name)
      : tokens_(tokens), name_(name) {}

  Body parse_template() {
    Body body = parse_body({});
    if (current().type != TokenType::kEnd) fail("unexpected '" + end_tag_ + "'");
    return body;
  }

 private:
  // ---- token helpers ----
  const Token& current() const { return tokens_[pos_]; }
  const Token& peek(size_t ahead = 1) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }

  [[noreturn]] void fail(const std::string& what, int line = 0) const {
    throw Error(name_ + ":" + std::to_string(line ? line : current().line) + ": " + what);
  }

  bool at_operator(std::string_view op) const {
    return current().type == TokenType::kOperator && current().text == op;
  }
  bool at_name(std::string_view word) const {
    return current().type == TokenType::kName && current().text == word;
  }
  bool skip_operator(std::string_view op) {
    if (!at_operator(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view word) {
    if (!at_name(word)) return false;
    next();
    return true;
  }
  void expect_operator(std::string_view op) {
    if (!skip_operator(op)) fail("expected '" + std::string(op) + "', got " + describe(current()));
  }
  void expect_name(std::string_view word) {
    if (!skip_name(word)) fail("expected '" + std::string(word) + "', got " + describe(current()));
  }
  std::string expect_identifier() {
    if (current().type != TokenType::kName) fail("expected a name, got " + describe(current()));
    return next().text;
  }
  void expect_block_end() {
    if (current().type != TokenType::kBlockEnd) fail("expected '%}', got " + describe(current()));
    next();
  }
  static std::string describe(const Token& token) {
    switch (token.type) {
      case TokenType::kText:
        return "template text";
      case TokenType::kVariableBegin:
        return "'{{'";
      case TokenType::kVariableEnd:
        return "'}}'";
      case TokenType::kBlockBegin:
        return "'{%'";
      case TokenType::kBlockEnd:
        return "'%}'";
      case TokenType::kEnd:
        return "end of template";
      case TokenType::kString:
        return "string literal";
      default:
        return "'" + token.text + "'";
    }
  }

  ExprPtr make(Expr::Kind kind, int line) {
    auto expr = std::make_unique<Expr>();
    expr->kind = kind;
    expr->line = line;
    return expr;
  }

  // ---- statements ----

  // Parses nodes until a block tag whose keyword is in `terminators` (left unconsumed, with
  // the keyword in end_tag_) or the end of input.
  Body parse_body(const std::set<std::string>& terminators) {
    // Blocks nest by recursion here (and again when they run, and when the tree is freed).
    if (block_depth_ >= kMaxBlockNesting) {
      fail("blocks nested more than " + std::to_string(kMaxBlockNesting) + " deep");
    }
    ++block_depth_;
    struct Leave {
      int& depth;
      ~Leave() { --depth; }
    } leave{block_depth_};
    Body body;
    while (current().type != TokenType::kEnd) {
      const Token& token = current();
      if (token.type == TokenType::kVariableBegin || token.type == TokenType::kBlockBegin) {
        check_tag_length();
      }
      if (token.type == TokenType::kText) {
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::kText;
        node->line = token.line;
        node->text = token.text;
        body.push_back(std::move(node));
        next();
      } else if (token.type == TokenType::kVariableBegin) {
        next();
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::kOutput;
        node->line = token.line;
        node->expr = parse_expression();
        if (current().type != TokenType::kVariableEnd) {
          fail("expected '}}', got " + describe(current()));
        }
        next();
        body.push_back(std::move(node));
      } else if (token.type == TokenType::kBlockBegin) {
        const Token& keyword = peek();
        if (keyword.type == TokenType::kName && terminators.count(keyword.text)) {
          end_tag_ = keyword.text;
          return body;
        }
        next();
        if (NodePtr node = parse_statement()) body.push_back(std::move(node));
      } else {
        fail("unexpected " + describe(token));
      }
    }
    if (!terminators.empty()) {
      fail("missing '{% " + *terminators.rbegin() + " %}' (unexpected end of template)");
    }
    return body;
  }

  // An expression's tree is at most as deep as its tag has tokens, and the parser, the
  // interpreter and the tree's destructor all recurse once per level: a tag longer than
  // kMaxTagTokens is refused before it is parsed. Real chat templates' tags have tens.
  void check_tag_length() const {
    for (size_t i = pos_ + 1; i < tokens_.size(); ++i) {
      const TokenType type = tokens_[i].type;
      if (type == TokenType::kVariableEnd || type == TokenType::kBlockEnd ||
          type == TokenType::kEnd) {
        return;
      }
      if (i - pos_ > kMaxTagTokens) {
        fail("a tag of more than " + std::to_string(kMaxTagTokens) + " tokens");
      }
    }
  }

  // Consumes "{% keyword" already seen by parse_body, then the rest of that tag.
  void consume_end_tag(const std::string& keyword) {
    next();  // {%
    expect_name(keyword);
    if (current().type == TokenType::kName && keyword.rfind("end", 0) == 0) next();  // endmacro m
    expect_block_end();
  }

  NodePtr parse_statement() {
    const Token& keyword = current();
    if (keyword.type != TokenType::kName) fail("expected a statement keyword after '{%'");
    const std::string& word = keyword.text;
    if (word == "if") return parse_if();
    if (word == "for") return parse_for();
    if (word == "set") return parse_set();
    if (word == "macro") return parse_macro();
    if (word == "call") return parse_call_block();
    if (word == "filter") return parse_filter_block();
    if (word == "break" || word == "continue") return parse_loop_control();
    if (word == "generation") return parse_generation();
    if (word == "raw") fail("malformed {% raw %} tag");
    static const std::set<std::string> kUnsupported = {
        "extends", "include", "import", "from", "block", "with", "autoescape", "do", "trans"};
    if (kUnsupported.count(word)) fail("unsupported template statement '" + word + "'");
    fail("unknown template statement '" + word + "'");
  }

  NodePtr parse_if() {
    auto node = std::make_unique<Node>();
    node->kind = Node::Kind::kIf;
    node->line = next().line;
    node->conditions.push_back(parse_expression());
    expect_block_end();
    while (true) {
      node->bodies.push_back(parse_body({"elif", "else", "endif"}));
      std::string tag = end_tag_;
      next();  // {%
      next();  // keyword
      if (tag == "elif") {
        node->conditions.push_back(parse_expression());
        expect_block_end();
      } else if (tag == "else") {
        expect_block_end();
        node->else_body = parse_body({"endif"});
        consume_end_tag("endif");
        return node;
      } else {
        expect_block_end();
        return node;
      }
    }
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> targets;
    bool parenthesised = skip_operator("(");
    do {
      targets.push_back(expect_identifier());
    } while (skip_operator(","));
    if (parenthesised) expect_operator(")");
    return targets;
  }

  NodePtr parse_for() {
    auto node = std::make_unique<Node>();
    node->kind = Node::Kind::kFor;
    node->line = next().line;
    node->targets = parse_targets();
    expect_name("in");
    node->expr = parse_tuple_or_expression(/*allow_condition=*/false);
    if (skip_name("if")) node->condition = parse_expression();
    if (at_name("recursive")) fail("unsupported: recursive for loops");
    expect_block_end();
    node->body = parse_body({"else", "endfor"});
    if (end_tag_ == "else") {
      consume_end_tag("else");
      node->else_body = parse_body({"endfor"});
    }
    consume_end_tag("endfor");
    return node;
  }

  NodePtr parse_set() {
    auto node = std::make_unique<Node>();
    node->line = next().line;
    std::string first = expect_identifier();
    if (skip_operator(".")) {
      node->kind = Node::Kind::kSet;
      node->targets = {first};
      node->attribute = expect_identifier();
      expect_operator("=");
      node->expr = parse_tuple_or_expression(true);
      expect_block_end();
      return node;
    }
    node->targets = {first};
    while (skip_operator(",")) node->targets.push_back(expect_identifier());
    if (skip_operator("=")) {
      node->kind = Node::Kind::kSet;
      node->expr = parse_tuple_or_expression(true);
      expect_block_end();
      return node;
    }
    if (node->targets.size() != 1) fail("block set assigns a single name");
    node->kind = Node::Kind::kSetBlock;
    if (at_operator("|")) node->expr = parse_filter_chain(nullptr);
    expect_block_end();
    node->body = parse_body({"endset"});
    consume_end_tag("endset");
    return node;
  }

  std::vector<MacroParam> parse_params() {
    std::vector<MacroParam> params;
    expect_operator("(");
    while (!at_operator(")")) {
      if (!params.empty()) expect_operator(",");
      if (at_operator(")")) break;
      MacroParam param;
      param.name = expect_identifier();
      if (skip_operator("=")) param.default_value = parse_expression();
      params.push_back(std::move(param));
    }
    expect_operator(")");
    return params;
  }

  NodePtr parse_macro() {
    auto node = std::make_unique<Node>();
    node->kind = Node::Kind::kMacro;
    node->line = next().line;
    node->name = expect_identifier();
    node->params = parse_params();
    expect_block_end();
    node->body = parse_body({"endmacro"});
    consume_end_tag("endmacro");
    return node;
  }

  NodePtr parse_call_block() {
    auto node = std::make_unique<Node>();
    node->kind = Node::Kind::kCallBlock;
    node->line = next().line;
    if (at_operator("(")) node->params = parse_params();
    node->expr = parse_expression();
    if (node->expr->kind != Expr::Kind::kCall) fail("{% call %} expects a macro call");
    expect_block_end();
    node->body = parse_body({"endcall"});
    consume_end_tag("endcall");
    return node;
  }

  NodePtr parse_filter_block() {
    auto node = std::make_unique<Node>();
    node->kind = Node::Kind::kFilterBlock;
    node->line = next().line;
    node->expr = parse_filter_chain(parse_one_filter(nullptr));
    expect_block_end();
    node->body = parse_body({"endfilter"});
    consume_end_tag("endfilter");
    return node;
  }

  NodePtr parse_loop_control() {
    auto node = std::make_unique<Node>();
    node->kind = current().text == "break" ? Node::Kind::kBreak : Node::Kind::kContinue;
    node->line = next().line;
    expect_block_end();
    return node;
  }

  // transformers' {% generation %} marks assistant spans for training masks; it renders its
  // body unchanged, so it becomes an always-true if.
  NodePtr parse_generation() {
    auto node = std::make_unique<Node>();
    node->kind = Node::Kind::kIf;
    node->line = next().line;
    expect_block_end();
    auto always = make(Expr::Kind::kLiteral, node->line);
    always->literal = Value(true);
    node->conditions.push_back(std::move(always));
    node->bodies.push_back(parse_body({"endgeneration"}));
    consume_end_tag("endgeneration");
    return node;
  }

  // ---- expressions (jinja2 precedence, loosest first) ----

  ExprPtr parse_tuple_or_expression(bool allow_condition) {
    int line = current().line;
    ExprPtr first = allow_condition ? parse_expression() : parse_or();
    if (!at_operator(",")) return first;
    auto tuple = make(Expr::Kind::kTuple, line);
    tuple->args.push_back(std::move(first));
    while (skip_operator(",")) {
      if (current().type == TokenType::kBlockEnd || at_name("if")) break;
      tuple->args.push_back(allow_condition ? parse_expression() : parse_or());
    }
    return tuple;
  }

  ExprPtr parse_expression() {
    ExprPtr expr = parse_or();
    while (at_name("if")) {
      int line = next().line;
      auto conditional = make(Expr::Kind::kConditional, line);
      conditional->args.push_back(parse_or());
      conditional->args.push_back(std::move(expr));
      conditional->args.push_back(skip_name("else") ? parse_expression() : nullptr);
      expr = std::move(conditional);
    }
    return expr;
  }

  ExprPtr binary(ExprPtr left, const std::string& op, ExprPtr right, int line) {
    auto node = make(Expr::Kind::kBinary, line);
    node->name = op;
    node->args.push_back(std::move(left));
    node->args.push_back(std::move(right));
    return node;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (at_name("or")) {
      int line = next().line;
      left = binary(std::move(left), "or", parse_and(), line);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (at_name("and")) {
      int line = next().line;
      left = binary(std::move(left), "and", parse_not(), line);
    }
    return left;
  }

  ExprPtr parse_not() {
    if (at_name("not")) {
      auto node = make(Expr::Kind::kUnary, next().line);
      node->name = "not";
      node->args.push_back(parse_not());
      return node;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    int line = current().line;
    ExprPtr first = parse_math1();
    ExprPtr compare;
    static const std::set<std::string> kOps = {"==", "!=", "<", "<=", ">", ">="};
    while (true) {
      std::string op;
      if (current().type == TokenType::kOperator && kOps.count(current().text)) {
        op = next().text;
      } else if (skip_name("in")) {
        op = "in";
      } else if (at_name("not") && peek().type == TokenType::kName && peek().text == "in") {
        next();
        next();
        op = "not in";
      } else {
        break;
      }
      if (!compare) {
        compare = make(Expr::Kind::kCompare, line);
        compare->args.push_back(std::move(first));
      }
      compare->ops.push_back(op);
      compare->args.push_back(parse_math1());
    }
    return compare ? std::move(compare) : std::move(first);
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (at_operator("+") || at_operator("-")) {
      const Token& op = next();
      left = binary(std::move(left), op.text, parse_concat(), op.line);
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (at_operator("~")) {
      int line = next().line;
      left = binary(std::move(left), "~", parse_math2(), line);
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (at_operator("*") || at_operator("/") || at_operator("//") || at_operator("%")) {
      const Token& op = next();
      left = binary(std::move(left), op.text, parse_pow(), op.line);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (at_operator("**")) {
      int line = next().line;
      left = binary(std::move(left), "**", parse_unary(true), line);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filters) {
    ExprPtr node;
    if (at_operator("-") || at_operator("+")) {
      const Token& op = next();
      node = make(Expr::Kind::kUnary, op.line);
      node->name = op.text;
      node->args.push_back(parse_unary(false));
    } else {
      node = parse_postfix(parse_primary());
    }
    return with_filters ? parse_filters_and_tests(std::move(node)) : std::move(node);
  }

  ExprPtr parse_primary() {
    const Token& token = current();
    switch (token.type) {
      case TokenType::kName: {
        next();
        auto node = make(Expr::Kind::kLiteral, token.line);
        if (token.text == "true" || token.text == "True") {
          node->literal = Value(true);
        } else if (token.text == "false" || token.text == "False") {
          node->literal = Value(false);
        } else if (token.text == "none" || token.text == "None") {
          node->literal = Value(None{});
        } else {
          node->kind = Expr::Kind::kName;
          node->name = token.text;
        }
        return node;
      }
      case TokenType::kString: {
        auto node = make(Expr::Kind::kLiteral, token.line);
        std::string text;
        while (current().type == TokenType::kString) text += next().text;  // "a" "b" joins
        node->literal = Value(std::move(text));
        return node;
      }
      case TokenType::kInteger: {
        auto node = make(Expr::Kind::kLiteral, next().line);
        node->literal = Value(token.integer);
        return node;
      }
      case TokenType::kFloat: {
        auto node = make(Expr::Kind::kLiteral, next().line);
        node->literal = Value(token.number);
        return node;
      }
      case TokenType::kOperator:
        if (token.text == "(") return parse_parenthesised();
        if (token.text == "[") return parse_list();
        if (token.text == "{") return parse_dict();
        break;
      default:
        break;
    }
    fail("unexpected " + describe(token) + " in expression");
  }

  ExprPtr parse_parenthesised() {
    int line = next().line;
    if (skip_operator(")")) return make(Expr::Kind::kTuple, line);
    ExprPtr first = parse_expression();
    if (skip_operator(")")) return first;
    auto tuple = make(Expr::Kind::kTuple, line);
    tuple->args.push_back(std::move(first));
    while (skip_operator(",")) {
      if (at_operator(")")) break;
      tuple->args.push_back(parse_expression());
    }
    expect_operator(")");
    return tuple;
  }

  ExprPtr parse_list() {
    auto list = make(Expr::Kind::kList, next().line);
    while (!at_operator("]")) {
      if (!list->args.empty()) expect_operator(",");
      if (at_operator("]")) break;
      list->args.push_back(parse_expression());
    }
    expect_operator("]");
    return list;
  }

  ExprPtr parse_dict() {
    auto dict = make(Expr::Kind::kDict, next().line);
    while (!at_operator("}")) {
      if (!dict->args.empty()) expect_operator(",");
      if (at_operator("}")) break;
      dict->args.push_back(parse_expression());
      expect_operator(":");
      dict->args.push_back(parse_expression());
    }
    expect_operator("}");
    return dict;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (at_operator(".")) {
        int line = next().line;
        auto attribute = make(Expr::Kind::kAttribute, line);
        attribute->args.push_back(std::move(node));
        if (current().type == TokenType::kInteger) {
          // foo.0 is foo[0] in jinja2
          attribute->kind = Expr::Kind::kSubscript;
          auto index = make(Expr::Kind::kLiteral, line);
          index->literal = Value(next().integer);
          attribute->args.push_back(std::move(index));
        } else {
          attribute->name = expect_identifier();
        }
        node = std::move(attribute);
      } else if (at_operator("[")) {
        node = parse_subscript(std::move(node));
      } else if (at_operator("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr object) {
    int line = next().line;
    ExprPtr parts[3];
    int part = 0;
    bool is_slice = false;
    while (!at_operator("]")) {
      if (skip_operator(":")) {
        is_slice = true;
        if (++part > 2) fail("too many ':' in slice");
        continue;
      }
      if (parts[part]) fail("expected ':' or ']' in subscript");
      parts[part] = parse_expression();
    }
    expect_operator("]");
    if (!is_slice) {
      if (!parts[0]) fail("empty subscript");
      auto node = make(Expr::Kind::kSubscript, line);
      node->args.push_back(std::move(object));
      node->args.push_back(std::move(parts[0]));
      return node;
    }
    auto node = make(Expr::Kind::kSlice, line);
    node->args.push_back(std::move(object));
    for (auto& p : parts) node->args.push_back(std::move(p));
    return node;
  }

  // Fills node->args (after the first) and node->keywords from "( ... )".
  void parse_call_arguments(Expr& node) {
    expect_operator("(");
    bool first = true;
    while (!at_operator(")")) {
      if (!first) expect_operator(",");
      first = false;
      if (at_operator(")")) break;
      if (at_operator("*") || at_operator("**")) fail("unsupported: *args / **kwargs in calls");
      if (current().type == TokenType::kName && peek().type == TokenType::kOperator &&
          peek().text == "=") {
        std::string key = next().text;
        next();
        node.keywords.emplace_back(key, parse_expression());
      } else {
        if (!node.keywords.empty()) fail("positional argument after keyword argument");
        node.args.push_back(parse_expression());
      }
    }
    expect_operator(")");
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto node = make(Expr::Kind::kCall, current().line);
    node->args.push_back(std::move(callee));
    parse_call_arguments(*node);
    return node;
  }

  // `operand | f(args) | g` ; operand null for filter blocks / block sets.
  ExprPtr parse_filter_chain(ExprPtr operand) {
    ExprPtr node = std::move(operand);
    while (skip_operator("|")) node = parse_one_filter(std::move(node));
    return node;
  }

  ExprPtr parse_one_filter(ExprPtr operand) {
    int line = current().line;
    std::string filter = expect_identifier();
    while (skip_operator(".")) filter += "." + expect_identifier();
    if (!has_filter(filter)) fail("unsupported filter '" + filter + "'", line);
    auto node = make(Expr::Kind::kFilter, line);
    node->name = filter;
    node->args.push_back(std::move(operand));
    if (at_operator("(")) parse_call_arguments(*node);
    return node;
  }

  ExprPtr parse_filters_and_tests(ExprPtr node) {
    while (true) {
      if (at_operator("|")) {
        next();
        node = parse_one_filter(std::move(node));
      } else if (at_name("is")) {
        node = parse_test(std::move(node));
      } else if (at_operator("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_test(ExprPtr operand) {
    int line = next().line;  // is
    auto node = make(Expr::Kind::kTest, line);
    node->negated = skip_name("not");
    std::string test = expect_identifier();
    while (skip_operator(".")) test += "." + expect_identifier();
    if (!has_test(test)) fail("unsupported test '" + test + "'", line);
    node->name = test;
    node->args.push_back(std::move(operand));
    const Token& token = current();
    bool argument_follows =
        token.type == TokenType::kString || token.type == TokenType::kInteger ||
        token.type == TokenType::kFloat ||
        (token.type == TokenType::kName && token.text != "else" && token.text != "or" &&
         token.text != "and") ||
        (token.type == TokenType::kOperator && (token.text == "[" || token.text == "{"));
    if (at_operator("(")) {
      parse_call_arguments(*node);
    } else if (argument_follows) {
      if (at_name("is")) fail("cannot chain tests with 'is'");
      node->args.push_back(parse_postfix(parse_primary()));
    }
    return node;
  }

  static constexpr int kMaxBlockNesting = 100;
  static constexpr size_t kMaxTagTokens = 512;

  const std::vector<Token>& tokens_;
  const std::string& name_;
  size_t pos_ = 0;
  std::string end_tag_;
  int block_depth_ = 0;
};

}  // namespace

Body parse(const std::vector<Token>& tokens, const std::string& name) {
  return Parser(tokens, name).parse_template();
}

}  // namespace qmlx::jinja
