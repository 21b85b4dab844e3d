#include "grammar/grammar_composition.h"

#include "grammar/grammar_text.h"

namespace qmlx::grammar {
namespace {

void prefix_references(Expr& expr, const std::string& prefix) {
  if (expr.kind == Expr::Kind::kRef) expr.name = prefix + expr.name;
  for (Expr& child : expr.children) prefix_references(child, prefix);
}

std::string expr_text(const Expr& expr);

std::string grouped(const Expr& expr) { return "(" + expr_text(expr) + ")"; }

std::string repeat_suffix(const Expr& expr) {
  if (expr.max == Expr::kUnbounded) return "{" + std::to_string(expr.min) + ",}";
  return "{" + std::to_string(expr.min) + "," + std::to_string(expr.max) + "}";
}

std::string expr_text(const Expr& expr) {
  switch (expr.kind) {
    case Expr::Kind::kLiteral:
      return grammar_literal(expr.bytes);
    case Expr::Kind::kClass:
      // A class that matches nothing (the parser complements `[^...]` into it) has no
      // positive spelling; the complement of every code point writes it.
      return expr.ranges.empty() ? "[^\\x00-\\U0010ffff]" : grammar_class(expr.ranges);
    case Expr::Kind::kRef:
      return expr.name;
    case Expr::Kind::kRepeat:
      return grouped(expr.children.front()) + repeat_suffix(expr);
    case Expr::Kind::kSequence: {
      if (expr.children.empty()) return "\"\"";
      std::string out;
      for (const Expr& child : expr.children) {
        out += (out.empty() ? "" : " ") + grouped(child);
      }
      return out;
    }
    case Expr::Kind::kAlternation: {
      std::string out;
      for (const Expr& child : expr.children) {
        out += (out.empty() ? "" : " | ") + grouped(child);
      }
      return out;
    }
  }
  return "\"\"";
}

}  // namespace

std::string embed_rules(GrammarAst& into, const GrammarAst& part, const std::string& prefix) {
  for (const auto& [name, body] : part.rules) {
    Expr renamed = body;
    prefix_references(renamed, prefix);
    into.rules.emplace_back(prefix + name, std::move(renamed));
  }
  return prefix + "root";
}

std::string grammar_ast_text(const GrammarAst& ast) {
  std::string out;
  for (const auto& [name, body] : ast.rules) out += name + " ::= " + expr_text(body) + "\n";
  return out;
}

}  // namespace qmlx::grammar
