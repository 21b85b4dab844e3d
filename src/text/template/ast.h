// AST: the parsed form of a template. Expressions are one node type with a kind tag (the
// evaluator switches on it), statements likewise; every node keeps its source line so runtime
// errors can point into the template.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/template/value.h"

namespace qmlx::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,      // literal
    kName,         // name
    kList,         // args: items
    kTuple,        // args: items
    kDict,         // args: key0, value0, key1, value1, ...
    kAttribute,    // args[0] . name
    kSubscript,    // args[0] [ args[1] ]
    kSlice,        // args[0] [ args[1] : args[2] : args[3] ] (missing parts are null)
    kCall,         // args[0] ( args[1..], keywords )
    kFilter,       // args[0] | name ( args[1..], keywords ); args[0] null in filter blocks
    kTest,         // args[0] is [not] name ( args[1..] ); negated
    kUnary,        // name is "-", "+" or "not"; args[0]
    kBinary,       // args[0] name args[1]; name is an arithmetic/logic operator
    kCompare,      // args[0] ops[0] args[1] ops[1] args[2] ... (chained like Python)
    kConditional,  // args[1] if args[0] else args[2] (args[2] may be null)
  };

  Kind kind;
  int line = 0;
  std::string name;
  Value literal;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  std::vector<std::string> ops;
  bool negated = false;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: no default
};

struct Node {
  enum class Kind {
    kText,         // text
    kOutput,       // {{ expr }}
    kIf,           // conditions[i] guards bodies[i]; else_body
    kFor,          // for targets in expr [if condition]: body; else_body
    kSet,          // set targets = expr, or set targets[0].attribute = expr
    kSetBlock,     // set targets[0] [| filter]: body
    kMacro,        // macro name(params): body
    kCallBlock,    // call [(params)] expr: body becomes `caller`
    kFilterBlock,  // filter expr: body (expr is a filter chain applied to the body's output)
    kBreak,
    kContinue,
  };

  Kind kind;
  int line = 0;
  std::string text;
  std::string name;
  std::string attribute;
  std::vector<std::string> targets;
  ExprPtr expr;
  ExprPtr condition;
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
  Body body;
  Body else_body;
  std::vector<MacroParam> params;
};

}  // namespace qmlx::jinja
