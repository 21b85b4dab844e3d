// Parser: turns lexer tokens into an AST with jinja2's grammar and operator precedence.
// Constructs outside the Hugging Face chat-template subset (extends, include, import, block,
// recursive loops, ...) and unknown filters or tests are rejected here, at load time, with
// "<name>:<line>: <what>" in the qmlx::Error message.
#pragma once

#include <string>
#include <vector>

#include "text/template/ast.h"
#include "text/template/lexer.h"

namespace qmlx::jinja {

Body parse(const std::vector<Token>& tokens, const std::string& name);

}  // namespace qmlx::jinja
