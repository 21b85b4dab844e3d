// The grammar text syntax (GBNF-like; docs/grammar.md has the full description):
//
//   # a comment runs to the end of the line
//   root   ::= "{" ws pair ("," ws pair)* "}"
//   pair   ::= key ":" [0-9]+
//   key    ::= "\"" [a-z_]{1,16} "\""
//   ws     ::= [ \t\n]?
//
// Literals "..." are byte strings (UTF-8 as written; \n \r \t \\ \" \' \xHH for one raw byte,
// \uHHHH and \UHHHHHHHH for a code point). Classes [...] and [^...] are sets of Unicode code
// points (ranges a-z, the same escapes, \xHH meaning U+00HH), matched as UTF-8; `.` is any code
// point. Postfix * + ? {n} {n,} {n,m} repeat; | separates alternatives; ( ) groups. A rule runs
// until the next `name ::=`. The start rule is `root`. Left recursion is refused.
#pragma once

#include <string_view>

#include "grammar/grammar_ast.h"

namespace qmlx::grammar {

// Throws GrammarError with the line and column of the first error.
GrammarAst parse_grammar(std::string_view text);

}  // namespace qmlx::grammar
