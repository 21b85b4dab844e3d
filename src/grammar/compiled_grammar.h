// CompiledGrammar: the public entry points of the grammar engine. A grammar comes from our text
// syntax (grammar_parser.h) or from a JSON Schema (json_schema_compiler.h); it knows no
// vocabulary. TokenMaskTables::build() binds it to a TokenVocabulary, and a GrammarMatcher per
// sequence runs it:
//
//   auto vocab = TokenVocabulary::from_tokenizer(tokenizer, {eos_id});   // once per model
//   CompiledGrammar g = compile_json_schema(schema, {});                  // once per schema
//   auto tables = TokenMaskTables::build(g.grammar, vocab);               // or via the cache
//   GrammarMatcher m(tables);                                             // per sequence
//   m.fill_next_token_bitmask(mask); ... m.accept_token(id); ... m.rollback(k);
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/grammar_ast.h"

namespace qmlx::grammar {

// A schema keyword the engine cannot enforce, and where: a JSON Pointer into the schema.
struct UnsupportedKeyword {
  std::string keyword;
  std::string path;
  bool operator==(const UnsupportedKeyword&) const = default;
};

struct CompiledGrammar {
  std::shared_ptr<const Grammar> grammar;
  std::string text;  // the grammar in our text syntax (for logs and tests)
  // Keywords dropped from the constraint (JSON Schema only): under strict, the caller refuses.
  std::vector<UnsupportedKeyword> unsupported;
};

// Throws GrammarError on a syntax error, an undefined rule, left recursion or a limit.
CompiledGrammar compile_grammar(std::string_view text, const GrammarLimits& limits = {});

}  // namespace qmlx::grammar
