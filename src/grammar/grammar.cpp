#include "grammar/grammar.h"

#include <functional>

namespace qmlx::grammar {
namespace {

// Walks the nodes reachable from `start` without consuming a byte, calling `on_call` for each
// rule called on the way; a call continues past the callee only when the callee is nullable.
// Returns whether the end node is reachable (the path so far can match the empty string).
bool epsilon_walk(const Grammar& g, uint32_t start, const std::vector<bool>& nullable,
                  const std::function<void(uint32_t)>& on_call) {
  std::vector<bool> seen(g.nodes.size());
  std::vector<uint32_t> work{start};
  bool reaches_end = false;
  while (!work.empty()) {
    uint32_t n = work.back();
    work.pop_back();
    if (seen[n]) continue;
    seen[n] = true;
    const GrammarNode& node = g.nodes[n];
    switch (node.kind) {
      case GrammarNode::Kind::kBytes:
        break;
      case GrammarNode::Kind::kEnd:
        reaches_end = true;
        break;
      case GrammarNode::Kind::kSplit:
        for (uint32_t i = 0; i < node.next; ++i) work.push_back(g.split_targets[node.arg + i]);
        break;
      case GrammarNode::Kind::kRule:
        on_call(node.arg);
        if (nullable[node.arg]) work.push_back(node.next);
        break;
      case GrammarNode::Kind::kCounted: {
        const RepeatSpec& rep = g.repeats[node.arg];
        on_call(rep.body_rule);
        if (rep.min == 0 || nullable[rep.body_rule]) work.push_back(node.next);
        break;
      }
    }
  }
  return reaches_end;
}

}  // namespace

void check_no_left_recursion(const Grammar& g) {
  size_t rules = g.rule_start.size();
  std::vector<bool> nullable(rules);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < rules; ++r)
      if (!nullable[r] && epsilon_walk(g, g.rule_start[r], nullable, [](uint32_t) {})) {
        nullable[r] = true;
        changed = true;
      }
  }
  std::vector<std::vector<uint32_t>> left_calls(rules);
  for (size_t r = 0; r < rules; ++r)
    epsilon_walk(g, g.rule_start[r], nullable, [&](uint32_t c) { left_calls[r].push_back(c); });
  // Depth-first search for a cycle: 0 unvisited, 1 on the path, 2 done.
  std::vector<uint8_t> mark(rules);
  std::function<void(uint32_t)> visit = [&](uint32_t r) {
    mark[r] = 1;
    for (uint32_t c : left_calls[r]) {
      if (mark[c] == 1)
        throw GrammarError("grammar: rule '" + g.rule_names[c] +
                           "' is left-recursive (it can call itself before reading a byte)");
      if (mark[c] == 0) visit(c);
    }
    mark[r] = 2;
  };
  for (uint32_t r = 0; r < rules; ++r)
    if (mark[r] == 0) visit(r);
}

}  // namespace qmlx::grammar
