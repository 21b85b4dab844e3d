#include "grammar/compiled_grammar.h"

#include "grammar/grammar_parser.h"

namespace qmlx::grammar {

CompiledGrammar compile_grammar(std::string_view text, const GrammarLimits& limits) {
  CompiledGrammar out;
  out.grammar = std::make_shared<const Grammar>(build_grammar(parse_grammar(text), "root", limits));
  out.text = std::string(text);
  return out;
}

}  // namespace qmlx::grammar
