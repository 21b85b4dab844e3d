// Thompson construction of each rule body, written backwards: build(expr, next) returns the
// entry node of `expr` followed by `next`, so sequences need no patching.
#include <algorithm>
#include <unordered_map>

#include "grammar/grammar_ast.h"

namespace qmlx::grammar {
namespace {

using RuleIds = std::unordered_map<std::string, uint32_t>;

// Whether `e` can match the empty string, given which rules can (an undefined rule counts as
// nullable here; building reports it).
bool nullable(const Expr& e, const RuleIds& ids, const std::vector<bool>& rules) {
  switch (e.kind) {
    case Expr::Kind::kLiteral:
      return e.bytes.empty();
    case Expr::Kind::kClass:
      return false;
    case Expr::Kind::kRef: {
      auto it = ids.find(e.name);
      return it == ids.end() || rules[it->second];
    }
    case Expr::Kind::kSequence:
      return std::all_of(e.children.begin(), e.children.end(),
                         [&](const Expr& c) { return nullable(c, ids, rules); });
    case Expr::Kind::kAlternation:
      return std::any_of(e.children.begin(), e.children.end(),
                         [&](const Expr& c) { return nullable(c, ids, rules); });
    case Expr::Kind::kRepeat:
      return e.min == 0 || nullable(e.children.at(0), ids, rules);
  }
  return true;
}

std::vector<bool> nullable_rules(const GrammarAst& ast, const RuleIds& ids) {
  std::vector<bool> rules(ast.rules.size());
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < ast.rules.size(); ++r)
      if (!rules[r] && nullable(ast.rules[r].second, ids, rules)) rules[r] = changed = true;
  }
  return rules;
}

class Builder {
 public:
  Builder(Grammar& g, const std::unordered_map<std::string, uint32_t>& ids,
          const GrammarLimits& limits, const std::vector<bool>& nullable_rules)
      : g_(g),
        rule_ids_(ids),
        max_nodes_(limits.max_nodes),
        max_unrolled_(limits.max_unrolled_repeat),
        nullable_rules_(nullable_rules) {}

  uint32_t build(const Expr& e, uint32_t next) {
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        for (size_t i = e.bytes.size(); i-- > 0;) {
          ByteSet set;
          auto b = static_cast<uint8_t>(e.bytes[i]);
          set.add_range(b, b);
          next = bytes_node(set, next);
        }
        return next;
      case Expr::Kind::kClass: {
        std::vector<uint32_t> entries;
        for (const auto& r : e.ranges)
          for (const auto& seq : utf8_sequences(r.lo, r.hi)) {
            uint32_t n = next;
            for (size_t i = seq.size(); i-- > 0;) {
              ByteSet set;
              set.add_range(seq[i].first, seq[i].second);
              n = bytes_node(set, n);
            }
            entries.push_back(n);
          }
        if (entries.empty()) return split_node(entries);  // an empty class matches nothing
        return entries.size() == 1 ? entries[0] : split_node(entries);
      }
      case Expr::Kind::kRef: {
        auto it = rule_ids_.find(e.name);
        if (it == rule_ids_.end()) throw GrammarError("grammar: undefined rule '" + e.name + "'");
        return add({GrammarNode::Kind::kRule, it->second, next});
      }
      case Expr::Kind::kSequence:
        for (size_t i = e.children.size(); i-- > 0;) next = build(e.children[i], next);
        return next;
      case Expr::Kind::kAlternation: {
        std::vector<uint32_t> entries;
        for (const auto& child : e.children) entries.push_back(build(child, next));
        return entries.size() == 1 ? entries[0] : split_node(entries);
      }
      case Expr::Kind::kRepeat:
        return repeat(e.children.at(0), e.min, e.max, next);
    }
    return next;
  }

 private:
  uint32_t repeat(const Expr& body, uint32_t min, uint32_t max, uint32_t next) {
    uint32_t count = max == Expr::kUnbounded ? min : max;
    if (count > max_unrolled_ && !nullable(body, rule_ids_, nullable_rules_))
      return counted(body, min, max, next);
    if (max == Expr::kUnbounded) {
      // loop: split(body -> loop, next)
      uint32_t loop = reserve_split(2);
      uint32_t entry = build(body, loop);
      set_split(loop, {entry, next});
      next = loop;
    } else {
      for (uint32_t i = min; i < max; ++i) {  // optional copies, innermost first
        uint32_t entry = build(body, next);
        next = split_node({entry, next});
      }
    }
    for (uint32_t i = 0; i < min; ++i) next = build(body, next);
    return next;
  }

  // One counted node calling `body` as its own rule: the count lives in the stack frame.
  uint32_t counted(const Expr& body, uint32_t min, uint32_t max, uint32_t next) {
    if (max == 0) return next;
    auto rule = static_cast<uint32_t>(g_.rule_start.size());
    g_.rule_start.push_back(Grammar::kEndNode);
    g_.rule_names.push_back("repeat-" + std::to_string(g_.repeats.size()));
    g_.rule_start[rule] = build(body, Grammar::kEndNode);
    auto index = static_cast<uint32_t>(g_.repeats.size());
    static_assert(RepeatSpec::kUnbounded == Expr::kUnbounded);
    uint32_t node = add({GrammarNode::Kind::kCounted, index, next});
    g_.repeats.push_back({rule, min, max, node});
    return node;
  }

  uint32_t bytes_node(const ByteSet& set, uint32_t next) {
    auto [it, inserted] =
        set_ids_.try_emplace(key(set), static_cast<uint32_t>(g_.byte_sets.size()));
    if (inserted) g_.byte_sets.push_back(set);
    return add({GrammarNode::Kind::kBytes, it->second, next});
  }
  uint32_t split_node(const std::vector<uint32_t>& targets) {
    uint32_t n = reserve_split(static_cast<uint32_t>(targets.size()));
    set_split(n, targets);
    return n;
  }
  uint32_t reserve_split(uint32_t count) {
    uint32_t first = static_cast<uint32_t>(g_.split_targets.size());
    g_.split_targets.resize(first + count);
    return add({GrammarNode::Kind::kSplit, first, count});
  }
  void set_split(uint32_t node, const std::vector<uint32_t>& targets) {
    for (size_t i = 0; i < targets.size(); ++i)
      g_.split_targets[g_.nodes[node].arg + i] = targets[i];
  }
  uint32_t add(GrammarNode node) {
    if (g_.nodes.size() >= max_nodes_)
      throw GrammarError("grammar: more than " + std::to_string(max_nodes_) +
                             " automaton nodes (limit max_grammar_nodes)",
                         "max_grammar_nodes");
    g_.nodes.push_back(node);
    return static_cast<uint32_t>(g_.nodes.size() - 1);
  }
  static std::string key(const ByteSet& s) {
    return std::string(reinterpret_cast<const char*>(s.bits.data()), sizeof(s.bits));
  }

  Grammar& g_;
  const std::unordered_map<std::string, uint32_t>& rule_ids_;
  size_t max_nodes_;
  uint32_t max_unrolled_;
  const std::vector<bool>& nullable_rules_;
  std::unordered_map<std::string, uint32_t> set_ids_;
};

}  // namespace

Grammar build_grammar(const GrammarAst& ast, const std::string& root_name,
                      const GrammarLimits& limits) {
  Grammar g;
  g.nodes.push_back({GrammarNode::Kind::kEnd, 0, 0});
  std::unordered_map<std::string, uint32_t> ids;
  for (const auto& [name, expr] : ast.rules) {
    if (!ids.emplace(name, static_cast<uint32_t>(g.rule_names.size())).second)
      throw GrammarError("grammar: rule '" + name + "' defined twice");
    g.rule_names.push_back(name);
  }
  auto root = ids.find(root_name);
  if (root == ids.end()) throw GrammarError("grammar: no '" + root_name + "' rule");
  g.root_rule = root->second;
  g.rule_start.resize(ast.rules.size());
  std::vector<bool> nullable_flags = nullable_rules(ast, ids);
  Builder builder(g, ids, limits, nullable_flags);
  for (size_t i = 0; i < ast.rules.size(); ++i)
    g.rule_start[i] = builder.build(ast.rules[i].second, Grammar::kEndNode);
  check_no_left_recursion(g);
  return g;
}

}  // namespace qmlx::grammar
