// Composing grammars: one grammar's rules embedded in another under a name prefix, and a
// GrammarAst written back as grammar text. Callers that build a grammar out of others (the
// server's tool-call grammar: the call syntax around each tool's compiled parameter schema) work
// on the AST, then hand the text to GrammarCache, which keys and binds by text.
#pragma once

#include <string>

#include "grammar/grammar_ast.h"

namespace qmlx::grammar {

// Adds every rule of `part` to `into` with `prefix` before its name (references inside `part`
// follow), and returns the new name of `part`'s rule `root`. The caller picks prefixes that no
// rule of `into` starts with.
std::string embed_rules(GrammarAst& into, const GrammarAst& part, const std::string& prefix);

// The grammar in the text syntax (grammar_parser.h); parsing it gives back an equal grammar.
std::string grammar_ast_text(const GrammarAst& ast);

}  // namespace qmlx::grammar
