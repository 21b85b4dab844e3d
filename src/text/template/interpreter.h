// Interpreter: executes a parsed template against variables and returns the output text.
// Scoping follows jinja2: `for` bodies get a fresh scope per iteration (so `set` inside a loop
// does not leak, which is why templates use namespace()), `if` does not scope, macros see the
// scope they were defined in at call time.
#pragma once

#include <string>

#include "text/template/ast.h"
#include "text/template/value.h"

namespace qmlx::jinja {

// `variables` are the render-time names (messages, tools, ...); built-in globals are added
// beneath them. Errors are qmlx::Error "<name>:<line>: <what>".
std::string execute(const Body& body, const std::string& name, const DictObj& variables);

}  // namespace qmlx::jinja
