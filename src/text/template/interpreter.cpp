#include "text/template/interpreter.h"

#include <memory>
#include <unordered_map>

#include "base/error.h"
#include "text/template/builtins.h"
#include "text/template/operators.h"
#include "text/template/py_format.h"

namespace qmlx::jinja {
namespace {

struct Scope {
  std::unordered_map<std::string, Value> variables;
  std::shared_ptr<Scope> parent;

  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent.get()) {
      auto it = s->variables.find(name);
      if (it != s->variables.end()) return &it->second;
    }
    return nullptr;
  }
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { kNormal, kBreak, kContinue };

constexpr int kMaxMacroDepth = 200;
// eval() and exec() recurse once per level of expressions, blocks and macro calls together;
// past this many levels a template fails with an Error instead of exhausting the stack.
constexpr int kMaxEvalDepth = 1000;

// Counts one level of eval()/exec() recursion for as long as it lives.
class EvalDepthGuard {
 public:
  explicit EvalDepthGuard(int& depth) : depth_(depth) {
    if (depth_ >= kMaxEvalDepth) {
      throw Error("template nested too deeply (more than " + std::to_string(kMaxEvalDepth) +
                  " levels of expressions, blocks and macro calls)");
    }
    ++depth_;
  }
  ~EvalDepthGuard() { --depth_; }
  EvalDepthGuard(const EvalDepthGuard&) = delete;
  EvalDepthGuard& operator=(const EvalDepthGuard&) = delete;

 private:
  int& depth_;
};

// Whether `value` holds `target` (itself or anywhere inside). Storing such a value in `target`
// would make a cycle, which str() and tojson would follow forever and which never frees.
bool holds_namespace(const Value& value, const NamespaceObj* target, int depth = 0) {
  if (depth > kMaxValueDepth) throw Error("value nested too deeply");
  if (value.is_namespace()) {
    if (&value.as_namespace() == target) return true;
    for (const auto& [key, item] : value.as_namespace().attributes.entries) {
      if (holds_namespace(item, target, depth + 1)) return true;
    }
  } else if (value.is_list()) {
    for (const Value& item : value.as_list().items) {
      if (holds_namespace(item, target, depth + 1)) return true;
    }
  } else if (value.is_dict()) {
    for (const auto& [key, item] : value.as_dict().entries) {
      if (holds_namespace(item, target, depth + 1)) return true;
    }
  }
  return false;
}

class Interpreter {
 public:
  explicit Interpreter(const std::string& name) : name_(name) {}

  std::string run(const Body& body, const DictObj& variables) {
    auto globals = std::make_shared<Scope>();
    DictObj functions;
    add_global_functions(functions);
    for (auto& [key, value] : functions.entries) globals->variables[key] = value;
    auto root = std::make_shared<Scope>();
    root->parent = globals;
    for (const auto& [key, value] : variables.entries) root->variables[key] = value;
    std::string out;
    try {
      out_ = &out;
      Flow flow = exec_body(body, root);
      if (flow != Flow::kNormal) throw Error("'break' or 'continue' outside of a loop");
    } catch (const Error& e) {
      throw Error(name_ + ":" + std::to_string(line_) + ": " + e.what());
    }
    return out;
  }

 private:
  // ---- statements ----

  Flow exec_body(const Body& body, const ScopePtr& scope) {
    for (const auto& node : body) {
      Flow flow = exec(*node, scope);
      if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

  Flow exec(const Node& node, const ScopePtr& scope) {
    EvalDepthGuard guard(eval_depth_);
    line_ = node.line;
    switch (node.kind) {
      case Node::Kind::kText:
        out_->append(node.text);
        return Flow::kNormal;
      case Node::Kind::kOutput:
        out_->append(py::str(eval(*node.expr, scope)));
        return Flow::kNormal;
      case Node::Kind::kIf:
        return exec_if(node, scope);
      case Node::Kind::kFor:
        return exec_for(node, scope);
      case Node::Kind::kSet:
        exec_set(node, scope);
        return Flow::kNormal;
      case Node::Kind::kSetBlock: {
        Value captured(capture(node.body, scope));
        if (node.expr) captured = apply_filter_chain(*node.expr, captured, scope);
        scope->variables[node.targets[0]] = captured;
        return Flow::kNormal;
      }
      case Node::Kind::kMacro:
        scope->variables[node.name] = make_macro(node.name, node.params, node.body, scope);
        return Flow::kNormal;
      case Node::Kind::kCallBlock:
        exec_call_block(node, scope);
        return Flow::kNormal;
      case Node::Kind::kFilterBlock:
        out_->append(
            py::str(apply_filter_chain(*node.expr, Value(capture(node.body, scope)), scope)));
        return Flow::kNormal;
      case Node::Kind::kBreak:
        return Flow::kBreak;
      case Node::Kind::kContinue:
        return Flow::kContinue;
    }
    return Flow::kNormal;
  }

  // Renders `body` into a string instead of the current output.
  std::string capture(const Body& body, const ScopePtr& scope) {
    std::string text;
    std::string* saved = out_;
    out_ = &text;
    Flow flow = exec_body(body, scope);
    out_ = saved;
    if (flow != Flow::kNormal) throw Error("'break' or 'continue' outside of a loop");
    return text;
  }

  Flow exec_if(const Node& node, const ScopePtr& scope) {
    for (size_t i = 0; i < node.conditions.size(); ++i) {
      if (eval(*node.conditions[i], scope).truthy()) return exec_body(node.bodies[i], scope);
    }
    return exec_body(node.else_body, scope);
  }

  void bind_targets(const std::vector<std::string>& targets, const Value& value, Scope& scope) {
    if (targets.size() == 1) {
      scope.variables[targets[0]] = value;
      return;
    }
    std::vector<Value> parts = iterate(value);
    if (parts.size() != targets.size()) {
      throw Error("cannot unpack " + std::to_string(parts.size()) + " values into " +
                  std::to_string(targets.size()) + " names");
    }
    for (size_t i = 0; i < parts.size(); ++i) scope.variables[targets[i]] = parts[i];
  }

  Value make_loop(const std::vector<Value>& items, size_t i) {
    Value loop = Value::dict();
    DictObj& d = loop.as_dict();
    int64_t n = static_cast<int64_t>(items.size()), index = static_cast<int64_t>(i);
    d.set("index", Value(index + 1));
    d.set("index0", Value(index));
    d.set("revindex", Value(n - index));
    d.set("revindex0", Value(n - index - 1));
    d.set("first", Value(index == 0));
    d.set("last", Value(index == n - 1));
    d.set("length", Value(n));
    d.set("depth", Value(int64_t{1}));
    d.set("depth0", Value(int64_t{0}));
    if (i > 0) d.set("previtem", items[i - 1]);
    if (index + 1 < n) d.set("nextitem", items[i + 1]);
    d.set("cycle", Value::callable("loop.cycle", [index](Arguments& args) {
            if (args.positional.empty()) throw Error("loop.cycle() needs at least one value");
            return args.positional[index % args.positional.size()];
          }));
    return loop;
  }

  Flow exec_for(const Node& node, const ScopePtr& scope) {
    std::vector<Value> items = iterate(eval(*node.expr, scope));
    if (node.condition) {
      std::vector<Value> kept;
      for (const auto& item : items) {
        auto probe = std::make_shared<Scope>();
        probe->parent = scope;
        bind_targets(node.targets, item, *probe);
        if (eval(*node.condition, probe).truthy()) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) return exec_body(node.else_body, scope);
    for (size_t i = 0; i < items.size(); ++i) {
      auto iteration = std::make_shared<Scope>();
      iteration->parent = scope;
      bind_targets(node.targets, items[i], *iteration);
      iteration->variables["loop"] = make_loop(items, i);
      if (exec_body(node.body, iteration) == Flow::kBreak) break;
    }
    return Flow::kNormal;
  }

  void exec_set(const Node& node, const ScopePtr& scope) {
    Value value = eval(*node.expr, scope);
    if (node.attribute.empty()) {
      bind_targets(node.targets, value, *scope);
      return;
    }
    const Value* target = scope->find(node.targets[0]);
    if (!target || !target->is_namespace()) {
      throw Error("cannot assign attribute '" + node.attribute + "' on '" + node.targets[0] +
                  "': only namespace() objects can be assigned to");
    }
    if (holds_namespace(value, &target->as_namespace())) {
      throw Error("cannot store namespace '" + node.targets[0] + "' inside itself");
    }
    target->as_namespace().attributes.set(node.attribute, value);
  }

  Value make_macro(const std::string& name, const std::vector<MacroParam>& params, const Body& body,
                   const ScopePtr& defining_scope) {
    // A weak reference: the macro is stored in that very scope, and a strong one would leak.
    std::weak_ptr<Scope> weak_scope = defining_scope;
    return Value::callable(name, [this, name, &params, &body, weak_scope](Arguments& args) {
      ScopePtr scope = weak_scope.lock();
      if (!scope) throw Error("macro '" + name + "' called after its scope ended");
      return call_macro(name, params, body, scope, args);
    });
  }

  Value call_macro(const std::string& name, const std::vector<MacroParam>& params, const Body& body,
                   const ScopePtr& defining_scope, Arguments& args) {
    if (++macro_depth_ > kMaxMacroDepth) throw Error("macro recursion too deep in '" + name + "'");
    auto scope = std::make_shared<Scope>();
    scope->parent = defining_scope;
    std::vector<Value> varargs;
    for (size_t i = 0; i < args.positional.size(); ++i) {
      if (i < params.size()) {
        scope->variables[params[i].name] = args.positional[i];
      } else {
        varargs.push_back(args.positional[i]);
      }
    }
    Value kwargs = Value::dict();
    for (auto& [key, value] : args.keyword) {
      bool is_param = false;
      for (const auto& p : params) is_param = is_param || p.name == key;
      if (is_param || key == "caller") {
        scope->variables[key] = value;
      } else {
        kwargs.as_dict().set(key, value);
      }
    }
    for (const auto& p : params) {
      if (scope->variables.count(p.name)) continue;
      scope->variables[p.name] =
          p.default_value ? eval(*p.default_value, scope)
                          : Value::undefined("parameter '" + p.name + "' was not provided");
    }
    scope->variables["varargs"] = Value::list(std::move(varargs));
    scope->variables["kwargs"] = kwargs;
    int saved_line = line_;
    std::string text = capture(body, scope);
    line_ = saved_line;
    --macro_depth_;
    return Value(std::move(text));
  }

  void exec_call_block(const Node& node, const ScopePtr& scope) {
    const Expr& call = *node.expr;
    Value callee = eval(*call.args[0], scope);
    Arguments args = eval_arguments(call, scope);
    args.keyword.emplace_back("caller", make_macro("caller", node.params, node.body, scope));
    out_->append(py::str(invoke(callee, args)));
  }

  // ---- expressions ----

  Value eval(const Expr& expr, const ScopePtr& scope) {
    EvalDepthGuard guard(eval_depth_);
    line_ = expr.line;
    switch (expr.kind) {
      case Expr::Kind::kLiteral:
        return expr.literal;
      case Expr::Kind::kName: {
        const Value* found = scope->find(expr.name);
        return found ? *found : Value::undefined("'" + expr.name + "' is undefined");
      }
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        std::vector<Value> items;
        for (const auto& arg : expr.args) items.push_back(eval(*arg, scope));
        return Value::list(std::move(items), expr.kind == Expr::Kind::kTuple);
      }
      case Expr::Kind::kDict:
        return eval_dict(expr, scope);
      case Expr::Kind::kAttribute:
        return get_attribute(eval(*expr.args[0], scope), expr.name);
      case Expr::Kind::kSubscript: {
        Value object = eval(*expr.args[0], scope);
        return get_item(object, eval(*expr.args[1], scope));
      }
      case Expr::Kind::kSlice:
        return eval_slice(expr, scope);
      case Expr::Kind::kCall: {
        Value callee = eval(*expr.args[0], scope);
        Arguments args = eval_arguments(expr, scope);
        line_ = expr.line;
        return invoke(callee, args);
      }
      case Expr::Kind::kFilter:
        return apply_filter_chain(expr, Value(), scope);
      case Expr::Kind::kTest: {
        Value operand = eval(*expr.args[0], scope);
        Arguments args = eval_arguments(expr, scope);
        line_ = expr.line;
        return Value(apply_test(expr.name, operand, args) != expr.negated);
      }
      case Expr::Kind::kUnary:
        return eval_unary(expr, scope);
      case Expr::Kind::kBinary:
        return eval_binary(expr, scope);
      case Expr::Kind::kCompare:
        return eval_compare(expr, scope);
      case Expr::Kind::kConditional:
        if (eval(*expr.args[0], scope).truthy()) return eval(*expr.args[1], scope);
        if (expr.args[2]) return eval(*expr.args[2], scope);
        return Value::undefined("the inline if expression evaluated to false and no else");
    }
    throw Error("unknown expression");
  }

  Value eval_dict(const Expr& expr, const ScopePtr& scope) {
    Value dict = Value::dict();
    for (size_t i = 0; i + 1 < expr.args.size(); i += 2) {
      Value key = eval(*expr.args[i], scope);
      if (!key.is_string()) throw Error("unsupported: dict literal keys must be strings");
      dict.as_dict().set(key.as_string(), eval(*expr.args[i + 1], scope));
    }
    return dict;
  }

  std::optional<int64_t> slice_bound(const ExprPtr& bound, const ScopePtr& scope) {
    if (!bound) return std::nullopt;
    Value v = eval(*bound, scope);
    if (v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) throw Error("slice indices must be integers or None");
    return v.as_int();
  }

  Value eval_slice(const Expr& expr, const ScopePtr& scope) {
    Value object = eval(*expr.args[0], scope);
    auto start = slice_bound(expr.args[1], scope);
    auto stop = slice_bound(expr.args[2], scope);
    auto step = slice_bound(expr.args[3], scope);
    return slice(object, start, stop, step);
  }

  // Positional arguments are args[1..] (args[0] is the callee or operand).
  Arguments eval_arguments(const Expr& expr, const ScopePtr& scope) {
    Arguments args;
    for (size_t i = 1; i < expr.args.size(); ++i)
      args.positional.push_back(eval(*expr.args[i], scope));
    for (const auto& [key, value] : expr.keywords)
      args.keyword.emplace_back(key, eval(*value, scope));
    return args;
  }

  Value invoke(const Value& callee, Arguments& args) {
    if (callee.is_undefined()) throw Error(callee.undefined_hint());
    if (!callee.is_callable()) throw Error("'" + callee.type_name() + "' object is not callable");
    return callee.as_callable().call(args);
  }

  // A filter node's innermost operand is null in filter blocks: `input` stands in for it.
  Value apply_filter_chain(const Expr& expr, const Value& input, const ScopePtr& scope) {
    if (expr.kind != Expr::Kind::kFilter) return eval(expr, scope);
    Value operand = expr.args[0] ? apply_filter_chain(*expr.args[0], input, scope) : input;
    Arguments args = eval_arguments(expr, scope);
    line_ = expr.line;
    return apply_filter(expr.name, operand, args);
  }

  Value eval_unary(const Expr& expr, const ScopePtr& scope) {
    Value operand = eval(*expr.args[0], scope);
    if (expr.name == "not") return Value(!operand.truthy());
    if (expr.name == "-") return negate(operand);
    if (!operand.is_number())
      throw Error("bad operand type for unary +: '" + operand.type_name() + "'");
    return operand;
  }

  Value eval_binary(const Expr& expr, const ScopePtr& scope) {
    Value left = eval(*expr.args[0], scope);
    if (expr.name == "and") return left.truthy() ? eval(*expr.args[1], scope) : left;
    if (expr.name == "or") return left.truthy() ? left : eval(*expr.args[1], scope);
    Value right = eval(*expr.args[1], scope);
    line_ = expr.line;
    return binary_operation(expr.name, left, right);
  }

  Value eval_compare(const Expr& expr, const ScopePtr& scope) {
    Value left = eval(*expr.args[0], scope);
    for (size_t i = 0; i < expr.ops.size(); ++i) {
      Value right = eval(*expr.args[i + 1], scope);
      line_ = expr.line;
      if (!compare(expr.ops[i], left, right)) return Value(false);
      left = std::move(right);
    }
    return Value(true);
  }

  const std::string& name_;
  std::string* out_ = nullptr;
  int line_ = 0;
  int macro_depth_ = 0;
  int eval_depth_ = 0;
};

}  // namespace

std::string execute(const Body& body, const std::string& name, const DictObj& variables) {
  return Interpreter(name).run(body, variables);
}

}  // namespace qmlx::jinja
