// GrammarAst: the grammar as written (rules of literals, character classes, references,
// sequences, alternatives and repetitions) before it is compiled into automata. The text
// parser (grammar_parser.h) produces it; build_grammar() compiles it.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/utf8_ranges.h"

namespace qmlx::grammar {

struct Expr {
  enum class Kind { kLiteral, kClass, kRef, kSequence, kAlternation, kRepeat };
  static constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();

  Kind kind = Kind::kSequence;
  std::string bytes;                   // kLiteral: raw bytes (may be empty)
  std::vector<CodePointRange> ranges;  // kClass: accepted code points (already complemented)
  std::string name;                    // kRef
  std::vector<Expr> children;          // kSequence, kAlternation; kRepeat: one child
  uint32_t min = 0, max = 0;           // kRepeat
};

struct GrammarAst {
  std::vector<std::pair<std::string, Expr>> rules;  // in the order written; names unique
};

struct GrammarLimits {
  size_t max_nodes = 2'000'000;  // automaton nodes after expanding repetitions
  // x{n,m} with m (or, for x{n,}, n) at most this is unrolled into copies of x; larger counts
  // become one counted node (GrammarNode::Kind::kCounted) when x cannot match the empty string.
  // Unrolled copies each get their own vocabulary walk when bound; a counted body gets one.
  uint32_t max_unrolled_repeat = 4;
};

// Compiles `ast` with `root_name` as the start rule. Throws GrammarError on an undefined rule,
// left recursion or a grammar larger than the limits.
Grammar build_grammar(const GrammarAst& ast, const std::string& root_name = "root",
                      const GrammarLimits& limits = {});

}  // namespace qmlx::grammar
